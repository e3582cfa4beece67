package awsapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// The plugin passes its one rcache.Peer (sharedstore.NewPeer) to these caches.
var _ SharedCache = rcache.Peer(nil)

// memShared is an in-memory SharedCache on the test's clock: entries live for their ttl;
// down makes every call fail as a store would (fetching locally), refuse makes it fail
// without calling fetch.
type memShared struct {
	now func() time.Time

	mu      sync.Mutex
	vals    map[string][]byte
	expires map[string]time.Time
	ttls    map[string]time.Duration // the ttl each name was last stored with
	down    error
	refuse  error
	calls   int
}

func newMemShared(now func() time.Time) *memShared {
	return &memShared{now: now, vals: map[string][]byte{}, expires: map[string]time.Time{}, ttls: map[string]time.Duration{}}
}

func (m *memShared) Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, bool, error, error) {
	m.mu.Lock()
	m.calls++
	down, refuse := m.down, m.refuse
	v, ok := m.vals[name]
	ok = ok && m.now().Before(m.expires[name])
	m.mu.Unlock()
	switch {
	case refuse != nil:
		return nil, false, nil, refuse
	case down != nil:
		v, err := fetch(ctx)
		return v, false, down, err
	case ok:
		return v, true, nil, nil
	}
	v, err := fetch(ctx)
	if err != nil {
		return nil, false, nil, err
	}
	m.put(name, v, ttl)
	return v, false, nil, nil
}

func (m *memShared) put(name string, v []byte, ttl time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vals[name], m.expires[name], m.ttls[name] = v, m.now().Add(ttl), ttl
}

// clock is a settable time for the caches and the store fake.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const testShareRegion = "us-east-1"

// alarmsName is the name the alarms answer without a prefix is shared under.
const alarmsName = sharedName + testShareRegion + "\x00alarms\x00"

// TestShareRejectsBadEntries: an entry the cache cannot trust is a miss, counted: the
// answer comes from AWS, and nothing panics.
func TestShareRejectsBadEntries(t *testing.T) {
	entry := func(w wire[[]Alarm], v []Alarm, age time.Duration) func(t *testing.T, now time.Time) []byte {
		return func(t *testing.T, now time.Time) []byte {
			b, err := encode(w, v, now.Add(-age))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	contributors := func(t *testing.T, now time.Time) []byte {
		b, err := encode(wireContributors, []Contributor{{ID: "c"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name     string
		entry    func(t *testing.T, now time.Time) []byte
		rejected bool
		want     string // the answer's first alarm
	}{
		{name: "garbage", entry: func(*testing.T, time.Time) []byte { return []byte("\xff\x00not json") }, rejected: true, want: "-x"},
		{name: "another kind under the name", entry: contributors, rejected: true, want: "-x"},
		{name: "older than its keep", entry: entry(wireAlarms, []Alarm{{Name: "old"}}, 15*time.Second), rejected: true, want: "-x"},
		{name: "fresh", entry: entry(wireAlarms, []Alarm{{Name: "fresh"}}, 0), want: "fresh"},
		// A replica whose clock runs ahead: its answer is used, kept from now, no longer.
		{name: "fetched ahead of our clock", entry: entry(wireAlarms, []Alarm{{Name: "ahead"}}, -time.Hour), want: "ahead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const keep = 15 * time.Second // the ttl: the alarms say no period
			clk := newClock()
			mem := newMemShared(clk.now)
			mem.put(alarmsName, tc.entry(t, clk.now()), time.Hour)
			up := &countingAPI{}
			api := Cached(up, keep, clk.now, ShareThrough(mem, testShareRegion))
			got, err := api.Alarms(context.Background(), AlarmQuery{})
			if err != nil || len(got) != 1 || got[0].Name != tc.want {
				t.Fatalf("answer %+v, %v; want alarm %q", got, err, tc.want)
			}
			wantCalls, wantRejected := 0, int64(0)
			if tc.rejected {
				wantCalls, wantRejected = 1, 1
			}
			if st := api.(Sharing).ShareStats(); up.n("Alarms") != wantCalls || st.Rejected != wantRejected || st.StoreErr != nil {
				t.Errorf("%d AWS calls, stats %+v; want %d calls, %d rejected", up.n("Alarms"), st, wantCalls, wantRejected)
			}
			// Kept locally for its keep from when it was fetched (or from now), not longer.
			clk.add(keep - time.Nanosecond)
			api.Alarms(context.Background(), AlarmQuery{})
			if up.n("Alarms") != wantCalls {
				t.Errorf("asked AWS again within the keep")
			}
			clk.add(time.Nanosecond)
			mem.put(alarmsName, []byte("gone"), time.Hour)
			api.Alarms(context.Background(), AlarmQuery{})
			if up.n("Alarms") != wantCalls+1 {
				t.Errorf("kept past the keep: %d calls, want %d", up.n("Alarms"), wantCalls+1)
			}
		})
	}
}

// TestShareStoreFailureNeverFailsTheCall: a store that fails (after fetching locally, or
// without calling fetch at all) leaves the answer to this replica's own call; the failure
// is visible until an operation succeeds again.
func TestShareStoreFailureNeverFailsTheCall(t *testing.T) {
	down := errors.New("shared store: timeout")
	for _, tc := range []struct {
		name string
		set  func(m *memShared)
	}{
		{"failed while fetching locally", func(m *memShared) { m.down = down }},
		{"failed without fetching", func(m *memShared) { m.refuse = down }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			mem := newMemShared(clk.now)
			tc.set(mem)
			up := &countingAPI{}
			api := Cached(up, 15*time.Second, clk.now, ShareThrough(mem, testShareRegion))
			inv, err := api.Inventory(context.Background())
			if err != nil || len(inv.Endpoints) != 1 || up.n("Inventory") != 1 {
				t.Fatalf("inventory %+v, %v after %d calls; want this replica's answer", inv, err, up.n("Inventory"))
			}
			if st := api.(Sharing).ShareStats(); !errors.Is(st.StoreErr, down) {
				t.Errorf("stats %+v, want the store's failure", st)
			}
			mem.down, mem.refuse = nil, nil
			if _, err := api.Contributors(context.Background(), "a"); err != nil {
				t.Fatal(err)
			}
			if st := api.(Sharing).ShareStats(); st.StoreErr != nil {
				t.Errorf("the store answered again, still %v", st.StoreErr)
			}
		})
	}
}

// TestShareStoresForTheAnswersKeep: the store keeps an answer as long as the cache does;
// an alarms answer's keep is known once read, so the next one is stored for it.
func TestShareStoresForTheAnswersKeep(t *testing.T) {
	clk := newClock()
	mem := newMemShared(clk.now)
	up := &countingAPI{every: []time.Duration{30 * time.Second}}
	api := Cached(up, 15*time.Second, clk.now, ShareThrough(mem, testShareRegion))
	ctx := context.Background()
	api.Alarms(ctx, AlarmQuery{})
	if got := mem.ttls[alarmsName]; got != 15*time.Second {
		t.Errorf("first alarms stored for %v, want the ttl (15s) before any answer said", got)
	}
	clk.add(30 * time.Second)
	api.Alarms(ctx, AlarmQuery{})
	api.Inventory(ctx)
	api.Contributors(ctx, "a")
	prices := CachedPrices(&countingLister{}, clk.now, ShareThrough(mem, testShareRegion))
	prices.Prices(ctx, "eu-west-1")
	for name, want := range map[string]time.Duration{
		alarmsName: 30 * time.Second,
		sharedName + testShareRegion + "\x00inventory":           time.Minute,
		sharedName + testShareRegion + "\x00contributors\x00a":   15 * time.Second,
		sharedName + testShareRegion + "\x00prices\x00eu-west-1": 24 * time.Hour,
	} {
		if got := mem.ttls[name]; got != want {
			t.Errorf("%q stored for %v, want %v", name, got, want)
		}
	}
	if up.n("Alarms") != 2 {
		t.Errorf("%d alarms calls, want 2", up.n("Alarms"))
	}
}

// partialInventory answers an inventory without its ICs, with err as ComponentsErr.
type partialInventory struct {
	*countingAPI
	err error
}

func (p partialInventory) Inventory(ctx context.Context) (Inventory, error) {
	inv, err := p.countingAPI.Inventory(ctx)
	inv.ComponentsErr = p.err
	return inv, err
}

// TestShareServesUnshareableAnswers: an answer the entry cannot carry is served as fetched
// and not stored; the next replica asks AWS itself.
func TestShareServesUnshareableAnswers(t *testing.T) {
	clk := newClock()
	mem := newMemShared(clk.now)
	odd := &PermissionError{Action: ActionListInferenceComponents, Err: errors.New("denied")}
	a, b := partialInventory{&countingAPI{}, odd}, partialInventory{&countingAPI{}, odd}
	for _, up := range []partialInventory{a, b} {
		inv, err := Cached(up, 15*time.Second, clk.now, ShareThrough(mem, testShareRegion)).Inventory(context.Background())
		if err != nil || inv.ComponentsErr != odd {
			t.Fatalf("inventory %+v, %v; want it with its own error", inv, err)
		}
	}
	if a.n("Inventory") != 1 || b.n("Inventory") != 1 || len(mem.vals) != 0 {
		t.Errorf("calls %d and %d, %d entries stored; want one call each and nothing stored", a.n("Inventory"), b.n("Inventory"), len(mem.vals))
	}
}

// TestShareNamesByRegionAndParameters: two replicas share an answer only for the same
// region and the same call.
func TestShareNamesByRegionAndParameters(t *testing.T) {
	clk := newClock()
	mem := newMemShared(clk.now)
	ctx := context.Background()
	replica := func(region string) (*countingAPI, API) {
		up := &countingAPI{}
		return up, Cached(up, 15*time.Second, clk.now, ShareThrough(mem, region))
	}
	upA, a := replica("us-east-1")
	upB, b := replica("us-east-1")
	upC, c := replica("eu-west-1")
	h := HistoryQuery{From: t0, To: t0.Add(time.Hour), AlarmNames: []string{"a", "b"}}
	for _, api := range []API{a, b, c} {
		api.Alarms(ctx, AlarmQuery{NamePrefix: "p"})
		api.History(ctx, h)
	}
	b.Alarms(ctx, AlarmQuery{NamePrefix: "q"})
	b.History(ctx, HistoryQuery{From: t0, To: t0.Add(time.Hour), AlarmNames: []string{"a"}})
	if upA.n("Alarms") != 1 || upA.n("History") != 1 || upB.n("Alarms") != 1 || upB.n("History") != 1 || upC.n("Alarms") != 1 || upC.n("History") != 1 {
		t.Errorf("alarms/history calls: A %d/%d, B %d/%d, C %d/%d; want 1/1 each (B's own prefix and names, C's own region)",
			upA.n("Alarms"), upA.n("History"), upB.n("Alarms"), upB.n("History"), upC.n("Alarms"), upC.n("History"))
	}
}

// TestShareOffLeavesTheCacheAsItWas: without a store (nil), or with ttl 0, the store is not
// asked and the cache counts nothing.
func TestShareOffLeavesTheCacheAsItWas(t *testing.T) {
	clk := newClock()
	up := &countingAPI{}
	api := Cached(up, 15*time.Second, clk.now, ShareThrough(nil, testShareRegion))
	api.Alarms(context.Background(), AlarmQuery{})
	api.Alarms(context.Background(), AlarmQuery{})
	if up.n("Alarms") != 1 || api.(Sharing).ShareStats() != (ShareStats{}) {
		t.Errorf("%d calls, stats %+v; want 1 and none", up.n("Alarms"), api.(Sharing).ShareStats())
	}
	mem := newMemShared(clk.now)
	api = Cached(up, 0, clk.now, ShareThrough(mem, testShareRegion))
	api.Alarms(context.Background(), AlarmQuery{})
	if mem.calls != 0 {
		t.Errorf("ttl 0 asked the store %d times", mem.calls)
	}
}
