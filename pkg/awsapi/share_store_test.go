package awsapi

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// storePeer is a SharedCache on the real store, as sharedstore.NewPeer builds one: the
// data source's namespace keys the name, Store.Once fetches it once across replicas.
type storePeer struct {
	st *sharedstore.Store
	ns sharedstore.Namespace
}

func (p storePeer) Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, bool, error, error) {
	r, err := p.st.Once(ctx, p.ns.Key("aws", name), sharedstore.Fill{TTL: ttl, Lease: 10 * time.Second, Wait: 10 * time.Second, Poll: 5 * time.Millisecond}, fetch)
	return r.Value, r.Outcome == sharedstore.FromStore || r.Outcome == sharedstore.FromHolder, r.StoreErr, err
}

// storeReplica is one plugin replica's caches over its own store connection and its own
// counting fakes of AWS.
type storeReplica struct {
	up      *countingAPI
	lister  *countingLister
	trail   *cachedTrail
	api     API
	prices  PriceLister
	changes ChangeLister
}

// uid is the data source's: tests on one server use their own.
func newStoreReplica(t *testing.T, addr, uid string, clk *clock) *storeReplica {
	t.Helper()
	// A generous deadline: the shared 2-core machine is loaded; the faults have their own tests.
	st, err := sharedstore.Open(sharedstore.Settings{Addresses: []string{addr}, KeyPrefix: "test:", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ns, err := sharedstore.NewNamespace("test:", 1, uid, sharedstore.Identity{Account: "123456789012", Region: testShareRegion})
	if err != nil {
		t.Fatal(err)
	}
	share := ShareThrough(storePeer{st: st, ns: ns}, testShareRegion)
	r := &storeReplica{up: &countingAPI{every: []time.Duration{30 * time.Second}}, lister: &countingLister{}, trail: &cachedTrail{}}
	r.api = Cached(r.up, 15*time.Second, clk.now, share)
	r.prices = CachedPrices(r.lister, clk.now, share)
	r.changes = CachedChanges(r.trail, time.Minute, clk.now, share)
	return r
}

// calls is how often the replica asked AWS, by cache.
func (r *storeReplica) calls() map[string]int {
	r.trail.mu.Lock()
	defer r.trail.mu.Unlock()
	out := map[string]int{"prices": int(r.lister.calls.Load()), "changes": r.trail.calls}
	for _, m := range []string{"Alarms", "Contributors", "History", "Inventory", "ScalingTargets"} {
		out[m] = r.up.n(m)
	}
	return out
}

// storeCalls are the cached calls, each answering what it read.
var storeCalls = []struct {
	name string
	call func(r *storeReplica) (any, error)
}{
	{"Alarms", func(r *storeReplica) (any, error) {
		return r.api.Alarms(context.Background(), AlarmQuery{NamePrefix: "gpu"})
	}},
	{"Contributors", func(r *storeReplica) (any, error) { return r.api.Contributors(context.Background(), "gpu-util") }},
	{"History", func(r *storeReplica) (any, error) {
		return r.api.History(context.Background(), HistoryQuery{From: t0, To: t0.Add(time.Hour), AlarmNames: []string{"gpu-util"}})
	}},
	{"Inventory", func(r *storeReplica) (any, error) { return r.api.Inventory(context.Background()) }},
	{"ScalingTargets", func(r *storeReplica) (any, error) { return r.api.ScalingTargets(context.Background()) }},
	{"prices", func(r *storeReplica) (any, error) { return r.prices.Prices(context.Background(), testShareRegion) }},
	{"changes", func(r *storeReplica) (any, error) {
		return r.changes.Changes(context.Background(), ChangeQuery{From: t0, To: t0.Add(time.Hour)})
	}},
}

// keeps is each cache's rule: the alarms' shortest period (30 s), the inventory and its
// scaling 4×15 s, contributors and history 15 s, prices a day, changes a minute.
var keeps = map[string]time.Duration{
	"Alarms": 30 * time.Second, "Contributors": 15 * time.Second, "History": 15 * time.Second,
	"Inventory": time.Minute, "ScalingTargets": time.Minute, "prices": 24 * time.Hour, "changes": time.Minute,
}

// TestStoreOneAWSCallForTwoReplicas: on the real store, two replicas asking for the same
// answer make one AWS call between them, and the second reads the first's answer as it was.
// Each keeps it by its rule counted from the fetch: both ask again once it has passed.
func TestStoreOneAWSCallForTwoReplicas(t *testing.T) {
	srv := storetest.Start(t)
	for _, c := range storeCalls {
		t.Run(c.name, func(t *testing.T) {
			clk := newClock()
			a, b := newStoreReplica(t, srv.Addr, c.name, clk), newStoreReplica(t, srv.Addr, c.name, clk)
			gotA, err := c.call(a)
			if err != nil {
				t.Fatal(err)
			}
			keep := keeps[c.name]
			clk.add(keep / 2)
			gotB, err := c.call(b)
			if err != nil {
				t.Fatal(err)
			}
			if a.calls()[c.name]+b.calls()[c.name] != 1 || !reflect.DeepEqual(gotA, gotB) {
				t.Fatalf("%d + %d AWS calls, answers %+v and %+v; want one call and the same answer", a.calls()[c.name], b.calls()[c.name], gotA, gotB)
			}
			// Both keep it until its keep from A's fetch, not from B's read.
			clk.add(keep/2 - time.Nanosecond)
			c.call(a)
			c.call(b)
			if n := a.calls()[c.name] + b.calls()[c.name]; n != 1 {
				t.Errorf("%d AWS calls within the keep, want 1", n)
			}
			clk.add(time.Nanosecond)
			c.call(a)
			c.call(b)
			if a.calls()[c.name] != 2 || b.calls()[c.name] != 1 {
				t.Errorf("after the keep: %d and %d AWS calls, want 2 and 1 (each asks again)", a.calls()[c.name], b.calls()[c.name])
			}
		})
	}
}

// TestStoreOneAWSCallForConcurrentMisses: two replicas missing the same inventory at once
// make one AWS call: one holds the lease, the other waits for its answer.
func TestStoreOneAWSCallForConcurrentMisses(t *testing.T) {
	srv := storetest.Start(t)
	clk := newClock()
	a, b := newStoreReplica(t, srv.Addr, "ds", clk), newStoreReplica(t, srv.Addr, "ds", clk)
	release := make(chan struct{})
	a.up.block, b.up.block = release, release
	var wg sync.WaitGroup
	invs := make([]Inventory, 2)
	errs := make([]error, 2)
	for i, r := range []*storeReplica{a, b} {
		wg.Go(func() { invs[i], errs[i] = r.api.Inventory(context.Background()) })
	}
	time.Sleep(50 * time.Millisecond) // let both reach the store; the count does not depend on it
	close(release)
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || !reflect.DeepEqual(invs[0], invs[1]) {
		t.Fatalf("answers %+v, %+v (%v, %v)", invs[0], invs[1], errs[0], errs[1])
	}
	if n := a.up.n("Inventory") + b.up.n("Inventory"); n != 1 {
		t.Errorf("%d AWS calls for two replicas missing at once, want 1", n)
	}
}

// TestStoreDownEachReplicaAnswers: with the store stopped, each replica answers from its
// own AWS call and shows the store's failure.
func TestStoreDownEachReplicaAnswers(t *testing.T) {
	srv := storetest.Start(t)
	clk := newClock()
	a, b := newStoreReplica(t, srv.Addr, "ds", clk), newStoreReplica(t, srv.Addr, "ds", clk)
	srv.Stop()
	for _, c := range storeCalls {
		for _, r := range []*storeReplica{a, b} {
			if _, err := c.call(r); err != nil {
				t.Errorf("%s with the store down: %v", c.name, err)
			}
			if r.calls()[c.name] != 1 {
				t.Errorf("%s: %d AWS calls, want the replica's own one", c.name, r.calls()[c.name])
			}
		}
	}
	for _, r := range []*storeReplica{a, b} {
		for name, cache := range map[string]any{"aws": r.api, "prices": r.prices, "changes": r.changes} {
			var se *sharedstore.Error
			if err := cache.(Sharing).ShareStats().StoreErr; !errors.As(err, &se) {
				t.Errorf("%s cache: store error %v, want the store's *Error", name, err)
			}
		}
	}
}
