package awsapi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// countingAPI counts upstream calls by method; block, when set, holds each call until
// it is closed; fail and panicWith make calls fail.
type countingAPI struct {
	calls     sync.Map // method → *atomic.Int32
	block     chan struct{}
	fail      error
	panicWith any
	size      int             // alarms per answer
	every     []time.Duration // the answer's alarms' evaluation periods
}

func (a *countingAPI) n(method string) int {
	v, _ := a.calls.LoadOrStore(method, new(atomic.Int32))
	return int(v.(*atomic.Int32).Load())
}

func (a *countingAPI) hit(ctx context.Context, method string) error {
	v, _ := a.calls.LoadOrStore(method, new(atomic.Int32))
	v.(*atomic.Int32).Add(1)
	if a.block != nil {
		select {
		case <-a.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if a.panicWith != nil {
		panic(a.panicWith)
	}
	return a.fail
}

func (a *countingAPI) Alarms(ctx context.Context, q AlarmQuery) ([]Alarm, error) {
	if err := a.hit(ctx, "Alarms"); err != nil {
		return nil, err
	}
	out := make([]Alarm, max(a.size, 1, len(a.every)))
	out[0] = Alarm{Name: q.NamePrefix + "-x", State: StateOK}
	for i, e := range a.every {
		out[i].Every = e
	}
	return out, nil
}

func (a *countingAPI) Contributors(ctx context.Context, name string) ([]Contributor, error) {
	return []Contributor{{ID: name}}, a.hit(ctx, "Contributors")
}

func (a *countingAPI) History(ctx context.Context, q HistoryQuery) ([]Transition, error) {
	return []Transition{{Alarm: "a", Time: q.To}}, a.hit(ctx, "History")
}

func (a *countingAPI) Inventory(ctx context.Context) (Inventory, error) {
	return Inventory{Region: "us-east-1", Endpoints: []Endpoint{{Name: "e"}}}, a.hit(ctx, "Inventory")
}

func (a *countingAPI) ScalingTargets(ctx context.Context) ([]ScalableTarget, error) {
	return []ScalableTarget{{ResourceID: "inference-component/a"}}, a.hit(ctx, "ScalingTargets")
}

func (a *countingAPI) ProbeScaling(ctx context.Context) error   { return a.hit(ctx, "ProbeScaling") }
func (a *countingAPI) ProbeAlarms(ctx context.Context) error    { return a.hit(ctx, "ProbeAlarms") }
func (a *countingAPI) ProbeInventory(ctx context.Context) error { return a.hit(ctx, "ProbeInventory") }

func TestCacheTTLAndKeys(t *testing.T) {
	ctx := context.Background()
	h := func(from time.Time) HistoryQuery {
		return HistoryQuery{From: from, To: from.Add(time.Hour), AlarmNames: []string{"a"}}
	}
	for _, tc := range []struct {
		name   string
		method string
		steps  func(api API)
		want   int // upstream calls
	}{
		{name: "alarms within ttl", method: "Alarms", want: 1, steps: func(api API) {
			api.Alarms(ctx, AlarmQuery{})
			time.Sleep(14 * time.Second)
			api.Alarms(ctx, AlarmQuery{})
		}},
		{name: "alarms after ttl", method: "Alarms", want: 2, steps: func(api API) {
			api.Alarms(ctx, AlarmQuery{})
			time.Sleep(15 * time.Second)
			api.Alarms(ctx, AlarmQuery{})
		}},
		{name: "alarms by prefix", method: "Alarms", want: 2, steps: func(api API) {
			api.Alarms(ctx, AlarmQuery{NamePrefix: "a"})
			api.Alarms(ctx, AlarmQuery{NamePrefix: "b"})
			api.Alarms(ctx, AlarmQuery{NamePrefix: "a"})
		}},
		{name: "inventory kept four ttls", method: "Inventory", want: 2, steps: func(api API) {
			api.Inventory(ctx)
			time.Sleep(59 * time.Second)
			api.Inventory(ctx)
			time.Sleep(time.Second)
			api.Inventory(ctx)
		}},
		{name: "scaling targets kept four ttls", method: "ScalingTargets", want: 2, steps: func(api API) {
			api.ScalingTargets(ctx)
			time.Sleep(59 * time.Second)
			api.ScalingTargets(ctx)
			time.Sleep(time.Second)
			api.ScalingTargets(ctx)
		}},
		{name: "history by range", method: "History", want: 2, steps: func(api API) {
			api.History(ctx, h(t0))
			api.History(ctx, h(t0))
			api.History(ctx, h(t0.Add(time.Minute)))
		}},
		{name: "history by names", method: "History", want: 2, steps: func(api API) {
			api.History(ctx, HistoryQuery{From: t0, To: t0, AlarmNames: []string{"a", "b"}})
			api.History(ctx, HistoryQuery{From: t0, To: t0, AlarmNames: []string{"ab"}})
		}},
		{name: "alarm probe never kept", method: "ProbeAlarms", want: 2, steps: func(api API) {
			api.ProbeAlarms(ctx)
			api.ProbeAlarms(ctx)
		}},
		{name: "inventory probe never kept", method: "ProbeInventory", want: 2, steps: func(api API) {
			api.Alarms(ctx, AlarmQuery{})
			api.ProbeInventory(ctx)
			api.ProbeInventory(ctx)
		}},
		{name: "contributors by alarm", method: "Contributors", want: 2, steps: func(api API) {
			api.Contributors(ctx, "a")
			api.Contributors(ctx, "a")
			api.Contributors(ctx, "b")
		}},
	} {
		// In a synctest bubble time.Sleep moves the fake clock time.Now reads.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := &countingAPI{}
				tc.steps(Cached(up, 15*time.Second, nil))
				if got := up.n(tc.method); got != tc.want {
					t.Errorf("%d upstream calls, want %d", got, tc.want)
				}
			})
		})
	}
}

func TestCacheKeepsNoErrors(t *testing.T) {
	up := &countingAPI{fail: &PermissionError{Action: ActionDescribeAlarms, Err: errors.New("denied")}}
	api := Cached(up, time.Minute, nil)
	for range 2 {
		if _, err := api.Alarms(context.Background(), AlarmQuery{}); !IsPermission(err) {
			t.Fatalf("error %v, want the upstream's PermissionError", err)
		}
	}
	if up.n("Alarms") != 2 {
		t.Errorf("%d upstream calls, want 2 (errors are not cached)", up.n("Alarms"))
	}
}

func TestCacheInstancesAreIsolated(t *testing.T) {
	up := &countingAPI{}
	a, b := Cached(up, time.Minute, nil), Cached(up, time.Minute, nil)
	a.Inventory(context.Background())
	b.Inventory(context.Background())
	a.Inventory(context.Background())
	if up.n("Inventory") != 2 {
		t.Errorf("%d upstream calls, want 2 (one per instance)", up.n("Inventory"))
	}
}

func TestCacheBounds(t *testing.T) {
	up := &countingAPI{}
	api := Cached(up, time.Minute, nil).(*cached)
	for i := range 3 * maxCacheEntries {
		api.History(context.Background(), HistoryQuery{From: t0.Add(time.Duration(i) * time.Second), To: t0.Add(time.Hour)})
	}
	if n := len(api.entries); n > maxCacheEntries {
		t.Errorf("%d entries kept, want at most %d", n, maxCacheEntries)
	}
	big := &countingAPI{size: maxCacheItems + 1}
	api = Cached(big, time.Minute, nil).(*cached)
	api.Alarms(context.Background(), AlarmQuery{})
	api.Alarms(context.Background(), AlarmQuery{})
	if big.n("Alarms") != 2 || api.items != 0 {
		t.Errorf("an answer over the item bound was kept (%d calls, %d items)", big.n("Alarms"), api.items)
	}
}

// TestCacheCoalesces runs in a synctest bubble, so "every caller is waiting" is a fact
// (synctest.Wait) rather than a sleep.
func TestCacheCoalesces(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      error
		panicWith any
		wantErr   error
	}{
		{name: "answer shared", wantErr: nil},
		{name: "error shared, not kept", fail: errors.New("boom")},
		{name: "panic: the others are released", panicWith: "bad", wantErr: errShared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := &countingAPI{block: make(chan struct{}), fail: tc.fail, panicWith: tc.panicWith}
				api := Cached(up, 0, nil) // ttl 0: only coalescing can save calls
				var wg sync.WaitGroup
				errs := make([]error, 5)
				wg.Go(func() {
					defer func() { recover() }() // the caller of a panicking call gets the panic
					_, errs[0] = api.Alarms(context.Background(), AlarmQuery{NamePrefix: "p"})
				})
				synctest.Wait()
				for i := 1; i < len(errs); i++ {
					wg.Go(func() { _, errs[i] = api.Alarms(context.Background(), AlarmQuery{NamePrefix: "p"}) })
				}
				synctest.Wait()
				close(up.block)
				wg.Wait()
				if up.n("Alarms") != 1 {
					t.Errorf("%d upstream calls for 5 identical concurrent ones, want 1", up.n("Alarms"))
				}
				want := tc.wantErr
				if tc.fail != nil {
					want = tc.fail
				}
				for i, err := range errs[1:] {
					if !errors.Is(err, want) {
						t.Errorf("waiter %d: error %v, want %v", i, err, want)
					}
				}
				// Nothing is left behind: the next call is made afresh and succeeds.
				up.fail, up.panicWith = nil, nil
				if _, err := api.Alarms(context.Background(), AlarmQuery{NamePrefix: "p"}); err != nil {
					t.Errorf("a later call: %v", err)
				}
				if up.n("Alarms") != 2 {
					t.Errorf("a later call was not made afresh (%d calls)", up.n("Alarms"))
				}
			})
		})
	}
}

func TestCacheWaiterOutlivesCanceledLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &countingAPI{block: make(chan struct{})}
		api := Cached(up, time.Minute, nil)
		leaderCtx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var leaderErr, waiterErr error
		var got Inventory
		wg.Go(func() { _, leaderErr = api.Inventory(leaderCtx) })
		synctest.Wait()
		wg.Go(func() { got, waiterErr = api.Inventory(context.Background()) })
		synctest.Wait()
		cancel() // the leader gives up; the waiter makes its own call
		synctest.Wait()
		close(up.block)
		wg.Wait()
		if !errors.Is(leaderErr, context.Canceled) || waiterErr != nil || len(got.Endpoints) != 1 {
			t.Errorf("leader %v, waiter %v with %d endpoints; want canceled, and an answer", leaderErr, waiterErr, len(got.Endpoints))
		}
		if up.n("Inventory") != 2 {
			t.Errorf("%d upstream calls, want 2", up.n("Inventory"))
		}
	})
}

// TestAlarmsKeptForTheirShortestPeriod: an alarms answer is kept for the shortest
// evaluation period among its alarms (at least 10 s, at most 60 s), for the ttl when none
// says, and not at all with ttl 0.
func TestAlarmsKeptForTheirShortestPeriod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		every []time.Duration
		keep  time.Duration
	}{
		{"no period given", 15 * time.Second, nil, 15 * time.Second},
		{"usual 60 s alarms", 15 * time.Second, []time.Duration{time.Minute, 5 * time.Minute}, time.Minute},
		{"one 10 s alarm", 15 * time.Second, []time.Duration{time.Minute, 10 * time.Second, 0}, 10 * time.Second},
		{"30 s PromQL alarm", 15 * time.Second, []time.Duration{30 * time.Second, time.Hour}, 30 * time.Second},
		{"only slow alarms", 15 * time.Second, []time.Duration{time.Hour}, time.Minute},
		{"below CloudWatch's shortest", 15 * time.Second, []time.Duration{time.Second}, 10 * time.Second},
		{"ttl 0", 0, []time.Duration{time.Minute}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := &countingAPI{every: tc.every}
				api := Cached(up, tc.ttl, nil)
				ctx := context.Background()
				api.Alarms(ctx, AlarmQuery{})
				if tc.keep > 0 {
					time.Sleep(tc.keep - time.Millisecond)
					api.Alarms(ctx, AlarmQuery{})
					if n := up.n("Alarms"); n != 1 {
						t.Fatalf("asked again %s after: %d calls, want 1", tc.keep-time.Millisecond, n)
					}
					time.Sleep(time.Millisecond)
				}
				api.Alarms(ctx, AlarmQuery{})
				if n := up.n("Alarms"); n != 2 {
					t.Errorf("asked again %s after: %d calls, want 2", tc.keep, n)
				}
			})
		})
	}
}
