package rcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// TestPeer is a real store's peer for one data source (sharedstore.Peer), the store key of
// an extent name, and the store's counts of entries it rejected, by reason.
type TestPeer struct {
	Peer     Peer
	Key      func(name string) string
	Rejected func() map[string]int64
}

// OpenTestPeer opens a TestPeer on the redis-server at addr for data source uid: set by
// store_test.go (package rcache_test), as sharedstore imports rcache.
var OpenTestPeer func(t testing.TB, addr, uid string, timeout time.Duration) TestPeer

// healthyTimeout is the store's deadline in tests that expect it to answer: generous, as
// the machine's cores are shared; the fault tests use a short one.
const healthyTimeout = 2 * time.Second

// replicas are n caches of data source uid (as n plugin processes would have), each with
// its own connection to the store at srv.
func replicas(t testing.TB, srv *storetest.Server, uid string, n int, timeout time.Duration, opts Options) ([]*Cache, []TestPeer) {
	t.Helper()
	var cs []*Cache
	var ps []TestPeer
	for range n {
		p := OpenTestPeer(t, srv.Addr, uid, timeout)
		o := opts
		o.Peer = p.Peer
		cs, ps = append(cs, New(o)), append(ps, p)
	}
	return cs, ps
}

// withReplicas runs a test with one cache alone, and with two replicas sharing a real
// store; newCaches gives each call's caches a data source of their own.
func withReplicas(t *testing.T, test func(t *testing.T, newCaches func(Options) []*Cache)) {
	t.Run("alone", func(t *testing.T) {
		test(t, func(o Options) []*Cache { return []*Cache{New(o)} })
	})
	t.Run("two replicas sharing a store", func(t *testing.T) {
		srv := storetest.Start(t)
		n := 0
		test(t, func(o Options) []*Cache {
			n++
			cs, _ := replicas(t, srv, fmt.Sprint("ds", n), 2, healthyTimeout, o)
			return cs
		})
	})
}

// sameAsUncached fails the test unless the answer is an uncached one made when its newest
// part was fetched (res.AsOf), for [start, end] or, lacking the newest point, for
// [start, end-step].
func sameAsUncached(t *testing.T, w *world, what string, a *promclient.Answer, res Result, start, end time.Time, step time.Duration) {
	t.Helper()
	got := rendered(t, a)
	if got != rendered(t, w.answer("m", start, end, step, res.AsOf)) && got != rendered(t, w.answer("m", start, end.Add(-step), step, res.AsOf)) {
		t.Fatalf("%s (%s): not an uncached answer as of %s", what, res.Describe(), res.AsOf.Format(time.TimeOnly))
	}
}

type served struct {
	a   *promclient.Answer
	res Result
	err error
}

// atOnce asks every cache for [start, end] at the same time (together). It returns the
// answers and the upstream calls made.
func atOnce(t *testing.T, cs []*Cache, k Key, start, end time.Time, fetch Fetch) ([]served, int32) {
	t.Helper()
	out := make([]served, len(cs))
	calls := together(t, len(cs), func(i int, upstream func()) {
		out[i].a, out[i].res, out[i].err = cs[i].QueryRange(context.Background(), k, start, end, func(ctx context.Context, s, e time.Time) (*promclient.Answer, error) {
			upstream()
			return fetch(ctx, s, e)
		})
	})
	return out, calls
}

// together runs ask for replicas 0..n-1 at the same time; each upstream call they make
// calls upstream first, which holds the first call until all have asked, so they miss
// together. It returns the upstream calls made.
func together(t *testing.T, n int, ask func(i int, upstream func())) int32 {
	t.Helper()
	var calls atomic.Int32
	release := make(chan struct{})
	upstream := func() {
		if calls.Add(1) == 1 {
			<-release
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ask(i, upstream)
		}()
	}
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the others reach the store; the outcome does not depend on it
	close(release)
	wg.Wait()
	return calls.Load()
}

// TestReplicasFetchOnce: four replicas miss the same extent at once: one upstream call,
// the others serve what it fetched (0 calls); a refresh's tail is fetched once across
// them too, and every answer is an uncached one as of its fetch.
func TestReplicasFetchOnce(t *testing.T) {
	srv := storetest.Start(t)
	step := time.Minute
	w := &world{now: base.Add(20 * time.Second), seed: 3, series: 4, maxDelay: 4 * time.Minute}
	cs, _ := replicas(t, srv, "ds1", 4, healthyTimeout, Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	for _, tc := range []struct {
		name    string
		advance time.Duration
		first   Outcome // the one replica that fetches
	}{
		{"cold load", 0, Miss},
		{"refresh after two step boundaries", 2 * time.Minute, Partial},
	} {
		w.advance(tc.advance)
		w.mu.Lock()
		w.calls = nil
		w.mu.Unlock()
		end := align(w.clock(), step)
		start := end.Add(-time.Hour)
		out, calls := atOnce(t, cs, k, start, end, w.fetch("m", step))
		if calls != 1 {
			t.Errorf("%s: %d upstream calls across 4 replicas, want 1", tc.name, calls)
		}
		outcomes := map[Outcome]int{}
		for i, o := range out {
			if o.err != nil || o.res.StoreErr != nil {
				t.Fatalf("%s, replica %d: %v, store %v", tc.name, i, o.err, o.res.StoreErr)
			}
			outcomes[o.res.Outcome]++
			sameAsUncached(t, w, fmt.Sprintf("%s, replica %d", tc.name, i), o.a, o.res, start, end, step)
		}
		if want := map[Outcome]int{tc.first: 1, SharedHit: 3}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
			t.Errorf("%s: outcomes %v, want %v", tc.name, outcomes, want)
		}
		if tc.first == Partial && (len(w.calls) != 1 || !w.calls[0][0].After(start)) {
			t.Errorf("%s: upstream asked for %v, want only the tail of %s..%s", tc.name, w.calls, start.Format(time.TimeOnly), end.Format(time.TimeOnly))
		}
	}
	var shared int64
	for _, c := range cs {
		shared += c.Stats().SharedHits
	}
	if shared != 6 {
		t.Errorf("%d shared hits counted, want 6", shared)
	}
}

// TestReplicaServesAnothersExtent: a second replica serves the first's extent without a
// call, exactly, whether the store keeps it whole or (a large panel) in chunks; a data
// source with another namespace (uid) on the same store does not.
func TestReplicaServesAnothersExtent(t *testing.T) {
	for _, series := range []int{3, 300} {
		t.Run(fmt.Sprint(series, " series"), func(t *testing.T) {
			srv := storetest.Start(t)
			step := time.Minute
			w := &world{now: base.Add(20 * time.Second), seed: 4, series: series, maxDelay: 4 * time.Minute}
			opts := Options{Now: w.clock, RefetchWindow: 10 * time.Minute}
			cs, _ := replicas(t, srv, "ds1", 2, healthyTimeout, opts)
			other, _ := replicas(t, srv, "ds2", 1, healthyTimeout, opts)
			k := Key{DataSource: "a", Expr: "m", Step: step}
			end := align(w.clock(), step)
			start := end.Add(-6 * time.Hour)
			for _, tc := range []struct {
				name  string
				c     *Cache
				want  Outcome
				calls int
			}{
				{"first replica", cs[0], Miss, 1},
				{"second replica", cs[1], SharedHit, 0},
				{"another data source", other[0], Miss, 1},
			} {
				w.mu.Lock()
				w.calls = nil
				w.mu.Unlock()
				a, res, err := tc.c.QueryRange(context.Background(), k, start, end, w.fetch("m", step))
				if err != nil || res.StoreErr != nil {
					t.Fatalf("%s: %v, store %v", tc.name, err, res.StoreErr)
				}
				if res.Outcome != tc.want || len(w.calls) != tc.calls || res.Fetches != tc.calls {
					t.Errorf("%s: %s with %d calls, want %s with %d", tc.name, res.Outcome, len(w.calls), tc.want, tc.calls)
				}
				sameAsUncached(t, w, tc.name, a, res, start, end, step)
			}
			raw := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
			defer raw.Close()
			chunks, err := raw.Keys(context.Background(), "*:g*:*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if chunked := len(chunks) > 0; chunked != (series > 3) {
				t.Errorf("%d chunk keys for %d series", len(chunks), series)
			}
		})
	}
}

// TestSharedExtentsAndAnnotations: an answer with warnings or infos is shared with them
// (the other replica serves the same annotations without a call); one with native
// histograms is not published: counted, and another replica fetches its own.
func TestSharedExtentsAndAnnotations(t *testing.T) {
	srv := storetest.Start(t)
	now := base
	step := time.Minute
	end := align(now, step)
	for i, tc := range []struct {
		name   string
		series func(s time.Time) promclient.Series
		shared bool
	}{
		{"floats", func(s time.Time) promclient.Series {
			return promclient.Series{Labels: map[string]string{"a": "1"}, T: []int64{s.UnixMilli()}, V: []float64{1}}
		}, true},
		{"native histograms", func(s time.Time) promclient.Series {
			return promclient.Series{Labels: map[string]string{"a": "1"}, Histograms: []promclient.Histogram{{T: s.UnixMilli(), Buckets: []promclient.Bucket{{Lower: 0, Upper: 1, Count: 3}}}}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := replicas(t, srv, fmt.Sprint("ds", i), 2, healthyTimeout, Options{Now: func() time.Time { return now }, RefetchWindow: 10 * time.Minute})
			calls := 0
			fetch := func(_ context.Context, s, e time.Time) (*promclient.Answer, error) {
				calls++
				return &promclient.Answer{Type: "matrix", Warnings: []string{"partial data"}, Infos: []string{"metric might not be a counter"},
					Series: []promclient.Series{tc.series(s)}}, nil
			}
			for r, c := range cs {
				a, res, err := c.QueryRange(context.Background(), Key{DataSource: "a", Expr: "m", Step: step}, end.Add(-time.Hour), end, fetch)
				want, wantCalls := Miss, r+1
				if tc.shared && r == 1 {
					want, wantCalls = SharedHit, 1
				}
				if err != nil || res.Outcome != want || calls != wantCalls {
					t.Errorf("replica %d: %s, %v after %d calls; want %s after %d", r, res.Outcome, err, calls, want, wantCalls)
				}
				if err == nil && (fmt.Sprint(a.Warnings) != "[partial data]" || fmt.Sprint(a.Infos) != "[metric might not be a counter]") {
					t.Errorf("replica %d: annotations %v %v", r, a.Warnings, a.Infos)
				}
			}
			if st := cs[0].Stats(); (st.KeptLocal == 1) == tc.shared {
				t.Errorf("kept local %d; shared %v", st.KeptLocal, tc.shared)
			}
		})
	}
}

// TestRejectedEntriesAreMisses: an extent in the store that fails its checksum, has an
// unknown version or is no entry at all is a miss: counted by reason, the extent fetched,
// the answer exact, no panic.
func TestRejectedEntriesAreMisses(t *testing.T) {
	srv := storetest.Start(t)
	step := time.Minute
	w := &world{now: base.Add(20 * time.Second), seed: 6, series: 2, maxDelay: time.Minute}
	opts := Options{Now: w.clock, RefetchWindow: 10 * time.Minute}
	cs, ps := replicas(t, srv, "ds1", 1, healthyTimeout, opts)
	k := Key{DataSource: "a", Expr: "m", Step: step}
	end := align(w.clock(), step)
	start := end.Add(-time.Hour)
	if _, res, err := cs[0].QueryRange(context.Background(), k, start, end, w.fetch("m", step)); err != nil || res.Outcome != Miss {
		t.Fatalf("cold load: %s %v", res.Outcome, err)
	}
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
	defer raw.Close()
	key := ps[0].Key(rangeName(k, mod(start.UnixMilli(), step.Milliseconds())))
	good, err := raw.Get(context.Background(), key).Bytes()
	if err != nil {
		t.Fatalf("the first replica published nothing at %s: %v", key, err)
	}
	for _, tc := range []struct {
		reason string
		bytes  func() []byte
	}{
		{"bad checksum", func() []byte { b := []byte(string(good)); b[len(b)/2] ^= 0x40; return b }},
		{"unknown version", func() []byte { b := []byte(string(good)); b[2] = 9; return b }},
		{"malformed", func() []byte { return []byte("not an extent") }},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			if err := raw.Set(context.Background(), key, tc.bytes(), time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			rs, rps := replicas(t, srv, "ds1", 1, healthyTimeout, opts)
			a, res, err := rs[0].QueryRange(context.Background(), k, start, end, w.fetch("m", step))
			if err != nil || res.StoreErr != nil || res.Outcome != Miss {
				t.Fatalf("%s, %v, store %v; want a miss", res.Outcome, err, res.StoreErr)
			}
			sameAsUncached(t, w, tc.reason, a, res, start, end, step)
			// Read twice: before the claim and again once holding it.
			for reason, n := range rps[0].Rejected() {
				if (reason == tc.reason) != (n > 0) {
					t.Errorf("rejected %v, want only %q", rps[0].Rejected(), tc.reason)
				}
			}
		})
	}
}

// TestStoreFaults: the store stopped and restarted, then paused (SIGSTOP) and resumed,
// while two replicas refresh: every request is answered exactly from the local cache and
// upstream, its Result carrying the store's failure; once the store answers again, the
// replicas share through it again.
func TestStoreFaults(t *testing.T) {
	srv := storetest.Start(t)
	step := time.Minute
	w := &world{now: base.Add(20 * time.Second), seed: 8, series: 3, maxDelay: 4 * time.Minute}
	cs, ps := replicas(t, srv, "ds1", 2, 100*time.Millisecond, Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	ask := func(what string, c *Cache) Result {
		t.Helper()
		end := align(w.clock(), step)
		start := end.Add(-time.Hour)
		a, res, err := c.QueryRange(context.Background(), k, start, end, w.fetch("m", step))
		if err != nil {
			t.Fatalf("%s: the request failed: %v", what, err)
		}
		sameAsUncached(t, w, what, a, res, start, end, step)
		return res
	}
	// shares: replica 0 refreshes through the store, replica 1 serves what it fetched.
	shares := func(what string) bool {
		w.advance(2 * time.Minute)
		r0, r1 := ask(what+", replica 0", cs[0]), ask(what+", replica 1", cs[1])
		return r0.StoreErr == nil && r1.StoreErr == nil && r0.Fetches == 1 && r1.Outcome == SharedHit
	}
	if !shares("healthy") {
		t.Fatal("healthy: the replicas did not share")
	}
	for _, f := range []struct {
		name          string
		fail, recover func()
	}{
		{"stopped", srv.Stop, srv.Restart},
		{"paused", srv.Pause, srv.Resume},
	} {
		f.fail()
		for i := range 3 {
			w.advance(2 * time.Minute)
			for r, c := range cs {
				res := ask(fmt.Sprintf("%s, refresh %d, replica %d", f.name, i, r), c)
				if res.Fetches != 1 || res.StoreErr == nil || !strings.Contains(res.StoreErr.Error(), "shared cache unavailable") {
					t.Errorf("%s, refresh %d, replica %d: %d calls, store error %v; want its own fetch and the store's failure", f.name, i, r, res.Fetches, res.StoreErr)
				}
			}
		}
		if ps[0].Peer.Unavailable() == nil {
			t.Errorf("%s: the peer does not say the store is unavailable", f.name)
		}
		f.recover()
		deadline := time.Now().Add(45 * time.Second) // beyond the backoff a few failures reach
		for !shares(f.name + ", recovered") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the replicas did not share again after the store came back", f.name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestSharedLookups: a lookup one replica fetched is served to another without a call and
// kept there until its TTL after the first fetch, not after the read.
func TestSharedLookups(t *testing.T) {
	srv := storetest.Start(t)
	now := base
	cs, _ := replicas(t, srv, "ds1", 2, healthyTimeout, Options{Now: func() time.Time { return now }})
	calls := 0
	fetch := func(context.Context) ([]byte, error) { calls++; return []byte(fmt.Sprint("values ", calls)), nil }
	ttl := time.Minute
	for _, tc := range []struct {
		at    time.Duration
		c     int
		want  Outcome
		body  string
		calls int
	}{
		{0, 0, Miss, "values 1", 1},
		{10 * time.Second, 1, SharedHit, "values 1", 1},
		{59 * time.Second, 1, Hit, "values 1", 1},
		{61 * time.Second, 1, Miss, "values 2", 2}, // a minute after the first fetch
	} {
		now = base.Add(tc.at)
		b, out, err := cs[tc.c].Lookup(context.Background(), "a", "/labels", ttl, fetch)
		if err != nil || out != tc.want || string(b) != tc.body || calls != tc.calls {
			t.Errorf("+%s, replica %d: %s %q %v after %d calls; want %s %q after %d", tc.at, tc.c, out, b, err, calls, tc.want, tc.body, tc.calls)
		}
	}
	failing := func(context.Context) ([]byte, error) { return nil, errors.New("upstream down") }
	if _, _, err := cs[0].Lookup(context.Background(), "a", "/other", ttl, failing); err == nil {
		t.Error("a failed lookup was served")
	}
}

// askExact asks a cache for the last span of "m" in w, at step, and checks the answer is
// an uncached one as of its fetch and that the store did not fail.
func askExact(t *testing.T, w *world, step time.Duration) func(what string, c *Cache, span time.Duration) Result {
	k := Key{DataSource: "a", Expr: "m", Step: step}
	return func(what string, c *Cache, span time.Duration) Result {
		t.Helper()
		end := align(w.clock(), step)
		a, res, err := c.QueryRange(context.Background(), k, end.Add(-span), end, w.fetch("m", step))
		if err != nil || res.StoreErr != nil {
			t.Fatalf("%s: %v, store %v", what, err, res.StoreErr)
		}
		sameAsUncached(t, w, what, a, res, end.Add(-span), end, step)
		return res
	}
}

// TestSharedExtentNarrowerThanLocal: a replica's stale extent meets a newer shared one
// that starts after its untrusted part (another replica zoomed in): the newer one replaces
// it rather than vouching for samples it does not hold, and the answer is exact.
func TestSharedExtentNarrowerThanLocal(t *testing.T) {
	srv := storetest.Start(t)
	step := time.Minute
	w := &world{now: base.Add(20 * time.Second), seed: 11, series: 3, maxDelay: 8 * time.Minute}
	cs, _ := replicas(t, srv, "ds1", 2, healthyTimeout, Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
	ask := askExact(t, w, step)
	ask("replica 0, cold", cs[0], time.Hour)
	w.advance(30 * time.Minute)
	ask("replica 1, the last 5 minutes", cs[1], 5*time.Minute)
	if res := ask("replica 0, the last hour", cs[0], time.Hour); res.Outcome != Partial || res.Fetches != 1 {
		t.Errorf("replica 0: %s with %d calls, want the head it lacks fetched", res.Outcome, res.Fetches)
	}
}

// TestReviewSkewedFetchedAt: a replica whose clock runs ahead publishes an extent; a
// replica with the right clock adopts it and, 5 steps later, must fetch its tail and the
// re-fetch window as of its own clock (the one-step rule), not trust the skewed times.
func TestReviewSkewedFetchedAt(t *testing.T) {
	for _, skew := range []time.Duration{0, 2 * time.Minute, 10 * time.Minute, 24 * time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			srv := storetest.Start(t)
			step := time.Minute
			w := &world{now: base.Add(20 * time.Second), seed: 3, series: 2, maxDelay: 4 * time.Minute}
			ahead := func() time.Time { return w.clock().Add(skew) }
			c0, _ := replicas(t, srv, "ds1", 1, healthyTimeout, Options{Now: ahead, RefetchWindow: 10 * time.Minute})
			c1, _ := replicas(t, srv, "ds1", 1, healthyTimeout, Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
			k := Key{DataSource: "a", Expr: "m", Step: step}
			ask := func(what string, c *Cache) Result {
				t.Helper()
				end := align(w.clock(), step)
				a, res, err := c.QueryRange(context.Background(), k, end.Add(-time.Hour), end, w.fetch("m", step))
				if err != nil || res.StoreErr != nil {
					t.Fatalf("%s: %v, store %v", what, err, res.StoreErr)
				}
				if res.AsOf.After(w.clock()) {
					t.Errorf("%s: as of %s, after now %s", what, res.AsOf.Format(time.TimeOnly), w.clock().Format(time.TimeOnly))
				}
				sameAsUncached(t, w, what, a, res, end.Add(-time.Hour), end, step)
				return res
			}
			end := align(w.clock(), step)
			if _, res, err := c0[0].QueryRange(context.Background(), k, end.Add(-time.Hour), end, w.fetch("m", step)); err != nil || res.Outcome != Miss {
				t.Fatalf("replica 0 (clock ahead): %s, %v; want a miss", res.Outcome, err)
			}
			if res := ask("replica 1", c1[0]); res.Outcome != SharedHit {
				t.Fatalf("replica 1: %s, want a shared hit", res.Outcome)
			}
			w.advance(5 * time.Minute)
			res := ask("replica 1, 5 steps later", c1[0])
			if res.Fetches == 0 {
				t.Errorf("served %s without a call 5 steps after the real fetch: the skewed FetchedAt was trusted", res.Outcome)
			}
		})
	}
}

// TestReviewTrimmedPublishShrinksShared: a 24 h extent is shared; a replica refreshing
// only the last hour publishes after it (having read the wide one, or holding a newer
// narrow one of its own), and a cold replica then asking 24 h fetches at most the tail:
// the shared extent kept the settled history.
func TestReviewTrimmedPublishShrinksShared(t *testing.T) {
	for _, narrowFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("narrow replica asked first: ", narrowFirst), func(t *testing.T) {
			srv := storetest.Start(t)
			step := time.Minute
			w := &world{now: base.Add(20 * time.Second), seed: 5, series: 2, maxDelay: time.Minute}
			cs, _ := replicas(t, srv, "ds1", 3, healthyTimeout, Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
			ask := askExact(t, w, step)
			if narrowFirst {
				// Replica 1's own hour is then as new as the shared day it adopts nothing from.
				ask("replica 1, 1 h", cs[1], time.Hour)
			}
			ask("replica 0, 24 h", cs[0], 24*time.Hour)
			w.advance(5 * time.Minute)
			ask("replica 1, 1 h, 5 steps later", cs[1], time.Hour)
			w.calls = nil
			res := ask("replica 2, 24 h, cold", cs[2], 24*time.Hour)
			for _, c := range w.calls {
				if c[1].Sub(c[0]) > time.Hour {
					t.Errorf("the cold replica fetched %s of history the store had (%s, calls %v)", c[1].Sub(c[0]), res.Describe(), w.calls)
				}
			}
		})
	}
}

// TestSharedHistoryBounded: an older shared extent lends a replica's newer, narrower one its
// settled history from at most a day ago (maxShareTTL), so an extent refreshed for ever
// does not grow for ever: a cold replica asking two days then fetches the older day.
func TestSharedHistoryBounded(t *testing.T) {
	srv := storetest.Start(t)
	step := time.Minute
	w := &world{now: base.Add(20 * time.Second), seed: 7, series: 2, maxDelay: time.Minute}
	cs, _ := replicas(t, srv, "ds1", 3, healthyTimeout, Options{Now: w.clock, RefetchWindow: 10 * time.Minute})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	ask := func(c *Cache, span time.Duration) {
		t.Helper()
		end := align(w.clock(), step)
		a, res, err := c.QueryRange(context.Background(), k, end.Add(-span), end, w.fetch("m", step))
		if err != nil || res.StoreErr != nil {
			t.Fatalf("%s: %v, store %v", span, err, res.StoreErr)
		}
		sameAsUncached(t, w, span.String(), a, res, end.Add(-span), end, step)
	}
	ask(cs[1], time.Hour)
	ask(cs[0], 48*time.Hour)
	w.advance(5 * time.Minute)
	ask(cs[1], time.Hour) // adopts the older extent's settled history, and publishes it
	w.calls = nil
	ask(cs[2], 48*time.Hour)
	if len(w.calls) != 1 {
		t.Fatalf("the cold replica made calls %v, want one for the older day", w.calls)
	}
	if head := w.calls[0][1].Sub(w.calls[0][0]); head < 23*time.Hour || head > 25*time.Hour {
		t.Errorf("the cold replica fetched %s: the shared extent should keep a day of history, not two, nor less", head)
	}
}
