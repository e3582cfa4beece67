package plugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// fakeLookups is CloudTrail's LookupEvents on loopback: an empty page for each call, the
// time it arrived recorded; a call beyond CloudTrail's 2 a second (a bucket of 2 refilled
// at 2 a second, as the emulator's) is throttled.
type fakeLookups struct {
	*httptest.Server
	mu        sync.Mutex
	at        []time.Time
	throttled int
	bucket    *rate.Limiter
}

func newFakeLookups(t *testing.T) *fakeLookups {
	f := &fakeLookups{bucket: rate.NewLimiter(2, 2)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if r.Header.Get("X-Amz-Target") != "CloudTrail_20131101.LookupEvents" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"UnknownOperationException","message":"only LookupEvents"}`))
			return
		}
		f.mu.Lock()
		f.at = append(f.at, time.Now())
		throttled := !f.bucket.Allow()
		if throttled {
			f.throttled++
		}
		f.mu.Unlock()
		if throttled {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"ThrottlingException","message":"Rate exceeded"}`))
			return
		}
		_, _ = w.Write([]byte(`{"Events":[]}`))
	}))
	t.Cleanup(f.Close)
	return f
}

// calls are the calls' arrival times and how many were throttled.
func (f *fakeLookups) calls() ([]time.Time, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.at), f.throttled
}

// mostIn is the most calls that arrived in any window of w (each starting at a call).
func mostIn(at []time.Time, w time.Duration) int {
	slices.SortFunc(at, time.Time.Compare)
	most := 0
	for i, t := range at {
		n := 0
		for _, u := range at[i:] {
			if u.Sub(t) < w {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// jitter is the arrival delay a call may gain after its pace let it go (scheduling on the
// shared machine, loopback): windows are counted that much shorter than a second, so a
// late call is not counted in its predecessor's second.
const jitter = 100 * time.Millisecond

// paceReplica is one replica's CloudTrail client as the plugin builds it (NewChanges), on
// the fake at url and, with store, the shared store.
func paceReplica(t *testing.T, url string, store map[string]any) awsapi.ChangeLister {
	t.Helper()
	s := testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"` + url + `"}`)
	var h *sharedStore
	if store != nil {
		s = withStore(t, s, store)
		h = openTestStore(t, 1, s)
	}
	ms, err := models.LoadSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := awsauth.ResolveRegionEndpoint(ms.Auth, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := awsauth.NewCredentialsProvider(context.Background(), ms.Auth, awsauth.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewChanges(ms, ep, Shared{Creds: creds, Store: h})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// probeAll has n replicas each make calls LookupEvents calls (Save & test's probe, never
// cached) at once; it returns the calls' errors.
func probeAll(reps []awsapi.ChangeLister, calls int) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				if err := r.ProbeChanges(context.Background()); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// TestStoreLookupEventsPace: four replicas of a data source (accountShare 100%: the
// account's 2 LookupEvents a second) send at most 2 calls in any second together through
// the store, none throttled; without the store each paces itself at 2 a second and
// together they exceed it; with the store stopped each keeps to its fallback (25% of the
// share: one call every 2 s) and every call succeeds.
func TestStoreLookupEventsPace(t *testing.T) {
	const replicas, calls = 4, 2
	srv := storetest.Start(t)
	store := map[string]any{"addresses": []string{srv.Addr}, "accountShare": 100}
	start := func(store map[string]any) (*fakeLookups, []awsapi.ChangeLister) {
		f := newFakeLookups(t)
		var reps []awsapi.ChangeLister
		for range replicas {
			reps = append(reps, paceReplica(t, f.URL, store))
		}
		return f, reps
	}

	f, reps := start(nil)
	errs := probeAll(reps, calls)
	at, throttled := f.calls()
	without := mostIn(at, time.Second-jitter)
	t.Logf("without a store: %d attempts, at most %d in one second, %d throttled, %d calls failed", len(at), without, throttled, len(errs))
	if without <= 2 {
		t.Errorf("without a store, four replicas sent at most %d calls in a second: the test cannot tell the shared pace from none", without)
	}

	f, reps = start(store)
	errs = probeAll(reps, calls)
	at, throttled = f.calls()
	with := mostIn(at, time.Second-jitter)
	t.Logf("with the store: %d attempts, at most %d in one second, %d throttled", len(at), with, throttled)
	if len(errs) > 0 || len(at) != replicas*calls || throttled != 0 {
		t.Errorf("with the store: %d attempts, %d throttled, errors %v: want %d, none throttled, no error", len(at), throttled, errs, replicas*calls)
	}
	if with > 2 {
		t.Errorf("with the store, four replicas sent %d calls in one second, more than the account's 2", with)
	}

	f, reps = start(store)
	srv.Stop()
	errs = probeAll(reps, calls)
	at, throttled = f.calls()
	stopped := mostIn(at, 2*time.Second-jitter)
	t.Logf("store stopped: %d attempts, at most %d in two seconds, %d throttled", len(at), stopped, throttled)
	if len(errs) > 0 {
		t.Errorf("with the store stopped, calls failed: %v", errs)
	}
	if len(at) < replicas*calls || stopped > replicas {
		t.Errorf("with the store stopped: %d attempts, at most %d in two seconds: want all %d calls, each replica's one every 2 s", len(at), stopped, replicas*calls)
	}
}

// TestStoreChangesSweptOnce: four replicas asking for one range at once sweep CloudTrail
// once between them, although the sweep, 13 calls at the account's 2 a second, takes
// longer than a lookup's 5 s wait: the others wait for it and read its answer.
func TestStoreChangesSweptOnce(t *testing.T) {
	srv := storetest.Start(t)
	f := newFakeLookups(t)
	var reps []awsapi.ChangeLister
	for range 4 {
		reps = append(reps, paceReplica(t, f.URL, map[string]any{"addresses": []string{srv.Addr}, "accountShare": 100}))
	}
	q := awsapi.ChangeQuery{From: time.Now().Add(-time.Hour), To: time.Now()}
	errs := make(chan error, len(reps))
	t0 := time.Now()
	for _, r := range reps {
		go func() { _, err := r.Changes(context.Background(), q); errs <- err }()
	}
	for range reps {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	sweep := 0
	for _, names := range changes.Events {
		sweep += len(names)
	}
	at, throttled := f.calls()
	t.Logf("four replicas, one range: %d LookupEvents calls in %v, %d throttled", len(at), time.Since(t0).Round(time.Millisecond), throttled)
	if len(at) != sweep || throttled != 0 {
		t.Errorf("%d calls (%d throttled), want one sweep of %d", len(at), throttled, sweep)
	}
}

// TestStoreLookupPaceDeadline: a call the shared pace cannot let go before the request's
// deadline fails at once, naming the setting to raise, and is never sent.
func TestStoreLookupPaceDeadline(t *testing.T) {
	srv := storetest.Start(t)
	f := newFakeLookups(t)
	r := paceReplica(t, f.URL, map[string]any{"addresses": []string{srv.Addr}, "accountShare": 100})
	if err := r.ProbeChanges(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The next call may go half a second later (2 a second).
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := r.ProbeChanges(ctx)
	if err == nil || !strings.Contains(err.Error(), "jsonData.sharedStore.accountShare") || ctx.Err() != nil {
		t.Errorf("a call past the deadline: %v (context %v), want an error naming accountShare before the deadline", err, ctx.Err())
	}
	if at, _ := f.calls(); len(at) != 1 {
		t.Errorf("%d calls arrived, want only the first", len(at))
	}
}
