package rcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// instantWorld answers instant queries from world's late-arriving samples: each series'
// newest sample at or before the evaluation time (within five minutes) that has arrived,
// at the evaluation time, plus m_ingested, the second the upstream was asked at, so every
// fetch's answer tells when it was made.
type instantWorld struct {
	*world
	step  time.Duration
	calls []instantCall // under world.mu
}

type instantCall struct{ eval, at time.Time }

func (w *instantWorld) body(eval, at time.Time) []byte {
	items := []string{fmt.Sprintf(`{"metric":{"__name__":"m_ingested"},"value":[%s,"%d"]}`, fmtTime(eval), at.Unix())}
	for i := range w.series {
		for g := align(eval, w.step); g.After(eval.Add(-5 * time.Minute)); g = g.Add(-w.step) {
			if !g.Add(w.delay(i, g.UnixMilli())).After(at) {
				items = append(items, fmt.Sprintf(`{"metric":{"__name__":"m","instance":"i-%03d"},"value":[%s,"%d"]}`, i, fmtTime(eval), (g.Unix()/60)*int64(i+1)%997))
				break
			}
		}
	}
	return []byte(`{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(items, ",") + `]}}`)
}

// fetch asks the upstream for the answer at eval, as of the world's clock.
func (w *instantWorld) fetch(eval time.Time) func(context.Context) (*promclient.Answer, error) {
	return func(context.Context) (*promclient.Answer, error) {
		w.mu.Lock()
		at := w.now
		w.calls = append(w.calls, instantCall{eval, at})
		w.mu.Unlock()
		return promclient.ReadAnswer(bytes.NewReader(w.body(eval, at)), 0)
	}
}

// made is the upstream call whose answer a is (the last of equal ones), or -1.
func (w *instantWorld) made(t *testing.T, a *promclient.Answer) int {
	t.Helper()
	w.mu.Lock()
	calls := append([]instantCall(nil), w.calls...)
	w.mu.Unlock()
	got := rendered(t, a)
	for i := len(calls) - 1; i >= 0; i-- {
		if rendered(t, w.body(calls[i].eval, calls[i].at)) == got {
			return i
		}
	}
	return -1
}

func (w *instantWorld) ncalls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls)
}

// TestReplicaServesAnothersInstant: a second replica serves the first's instant answer
// without a call, identical; a data source with another namespace on the same store does
// not.
func TestReplicaServesAnothersInstant(t *testing.T) {
	srv := storetest.Start(t)
	w := &instantWorld{world: &world{now: base.Add(20 * time.Second), seed: 4, series: 5, maxDelay: 4 * time.Minute}, step: time.Minute}
	opts := Options{Now: w.clock}
	cs, _ := replicas(t, srv, "ds1", 2, healthyTimeout, opts)
	other, _ := replicas(t, srv, "ds2", 1, healthyTimeout, opts)
	var first string
	for _, tc := range []struct {
		name  string
		c     *Cache
		want  Outcome
		calls int
	}{
		{"first replica", cs[0], Miss, 1},
		{"second replica", cs[1], SharedHit, 1},
		{"another data source", other[0], Miss, 2},
	} {
		a, out, err := tc.c.Instant(context.Background(), "a", "m", w.clock(), w.step, w.fetch(w.clock()))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if out != tc.want || w.ncalls() != tc.calls {
			t.Errorf("%s: %s after %d calls, want %s after %d", tc.name, out, w.ncalls(), tc.want, tc.calls)
		}
		if first == "" {
			first = rendered(t, a)
		}
		if got := rendered(t, a); got != first {
			t.Errorf("%s: the answer differs from the first replica's\n got %s\nwant %s", tc.name, got, first)
		}
	}
	if st := cs[1].Stats(); st.SharedHits != 1 || st.Fetches != 0 || st.StoreErrors != 0 {
		t.Errorf("second replica: %+v, want one shared hit and no fetch", st)
	}
}

// TestReplicasFetchInstantOnce: four replicas miss the same instant answer at once: one
// upstream call, the other three serve its answer.
func TestReplicasFetchInstantOnce(t *testing.T) {
	srv := storetest.Start(t)
	w := &instantWorld{world: &world{now: base.Add(20 * time.Second), seed: 5, series: 3, maxDelay: 4 * time.Minute}, step: time.Minute}
	cs, _ := replicas(t, srv, "ds1", 4, healthyTimeout, Options{Now: w.clock})
	out := make([]served, len(cs))
	outcomes := make([]Outcome, len(cs))
	calls := together(t, len(cs), func(i int, upstream func()) {
		fetch := w.fetch(w.clock())
		out[i].a, outcomes[i], out[i].err = cs[i].Instant(context.Background(), "a", "sum(m)", w.clock(), w.step, func(ctx context.Context) (*promclient.Answer, error) {
			upstream()
			return fetch(ctx)
		})
	})
	if calls != 1 {
		t.Errorf("%d upstream calls across 4 replicas, want 1", calls)
	}
	count := map[Outcome]int{}
	for i, o := range out {
		if o.err != nil {
			t.Fatalf("replica %d: %v", i, o.err)
		}
		count[outcomes[i]]++
		if w.made(t, o.a) != 0 {
			t.Errorf("replica %d (%s): not the answer fetched", i, outcomes[i])
		}
	}
	if want := map[Outcome]int{Miss: 1, SharedHit: 3}; fmt.Sprint(count) != fmt.Sprint(want) {
		t.Errorf("outcomes %v, want %v", count, want)
	}
}

// TestSharedInstantFreshness: a shared answer is served by the rule a local one is, as of
// its fetch and for its evaluation time: not for a time two steps from it, and no longer
// once the second step boundary after its fetch has passed, however recently it was read.
func TestSharedInstantFreshness(t *testing.T) {
	srv := storetest.Start(t)
	cold := base.Add(20 * time.Second) // 06:00:20
	w := &instantWorld{world: &world{now: cold, seed: 6, series: 3, maxDelay: 4 * time.Minute}, step: time.Minute}
	cs, _ := replicas(t, srv, "ds1", 2, healthyTimeout, Options{Now: w.clock})
	for i, tc := range []struct {
		replica  int
		at, eval time.Duration // after the cold load
		want     Outcome
		made     int // the upstream call whose answer is served
	}{
		{0, 0, 0, Miss, 0},
		{1, 30 * time.Second, 30 * time.Second, SharedHit, 0},
		{1, 30 * time.Second, 2 * time.Minute, Miss, 1}, // evaluated two steps on: asked
		{0, 90 * time.Second, 2*time.Minute + 10*time.Second, SharedHit, 1},
		// 06:02:00: call 1 (made at 06:00:50) is past its second boundary, though replica 0
		// read it at 06:01:50.
		{0, 100 * time.Second, 2*time.Minute + 10*time.Second, Miss, 2},
		{1, 105 * time.Second, 2*time.Minute + 10*time.Second, SharedHit, 2},
	} {
		w.mu.Lock()
		w.now = cold.Add(tc.at)
		w.mu.Unlock()
		eval := cold.Add(tc.eval)
		a, out, err := cs[tc.replica].Instant(context.Background(), "a", "m", eval, w.step, w.fetch(eval))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if made := w.made(t, a); out != tc.want || made != tc.made {
			t.Errorf("request %d (replica %d at +%s for +%s): %s with the answer of call %d, want %s with call %d's", i, tc.replica, tc.at, tc.eval, out, made, tc.want, tc.made)
		}
	}
	if n := w.ncalls(); n != 3 {
		t.Errorf("%d upstream calls, want 3", n)
	}
}

// TestUnsharedInstantsStayLocal: answers the shared encoding does not carry (scalars,
// strings, native histograms) are not published: counted, and the other replica fetches
// its own; a plain vector is shared, and so is one with warnings or infos, which the
// other replica's answer carries too.
func TestUnsharedInstantsStayLocal(t *testing.T) {
	srv := storetest.Start(t)
	now := base
	vector := func() *promclient.Answer {
		return &promclient.Answer{Type: "vector", Series: []promclient.Series{{Labels: map[string]string{"a": "1"}, T: []int64{now.UnixMilli()}, V: []float64{1}}}}
	}
	for i, tc := range []struct {
		name   string
		answer func() *promclient.Answer
		shared bool
	}{
		{"vector", vector, true},
		{"scalar", func() *promclient.Answer { return scalarAnswer(2) }, false},
		{"string", func() *promclient.Answer {
			return &promclient.Answer{Type: "string", Text: "x", Series: []promclient.Series{{T: []int64{now.UnixMilli()}}}}
		}, false},
		{"native histogram", func() *promclient.Answer {
			return &promclient.Answer{Type: "vector", Series: []promclient.Series{{Labels: map[string]string{"a": "1"}, Histograms: []promclient.Histogram{{T: now.UnixMilli(), Buckets: []promclient.Bucket{{Lower: 0, Upper: 1, Count: 3}}}}}}}
		}, false},
		{"warnings", func() *promclient.Answer { a := vector(); a.Warnings = []string{"result truncated"}; return a }, true},
		{"infos", func() *promclient.Answer { a := vector(); a.Infos = []string{"ignored histogram"}; return a }, true},
		// A server that reads the time parameter a millisecond short (the float seconds
		// 1790000000.123 truncated) stamps its samples before the time asked.
		{"a sample a millisecond early", func() *promclient.Answer { a := vector(); a.Series[0].T[0]--; return a }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := replicas(t, srv, fmt.Sprint("ds", i), 2, healthyTimeout, Options{Now: func() time.Time { return now }})
			calls := 0
			fetch := func(context.Context) (*promclient.Answer, error) { calls++; return tc.answer(), nil }
			want := map[bool]Outcome{true: SharedHit, false: Miss}[tc.shared]
			for r, c := range cs {
				a, out, err := c.Instant(context.Background(), "a", "m", now, time.Minute, fetch)
				if err != nil || rendered(t, a) != rendered(t, tc.answer()) {
					t.Fatalf("replica %d: %v, answer %s", r, err, rendered(t, a))
				}
				if r == 1 && out != want {
					t.Errorf("replica 1: %s, want %s", out, want)
				}
				if w := tc.answer(); fmt.Sprint(a.Warnings, a.Infos) != fmt.Sprint(w.Warnings, w.Infos) {
					t.Errorf("replica %d: annotations %v %v, want %v %v", r, a.Warnings, a.Infos, w.Warnings, w.Infos)
				}
			}
			if st := cs[0].Stats(); (st.KeptLocal == 1) == tc.shared || st.StoreErrors != 0 {
				t.Errorf("replica 0: kept local %d, store errors %d; shared %v", st.KeptLocal, st.StoreErrors, tc.shared)
			}
			if wantCalls := map[bool]int{true: 1, false: 2}[tc.shared]; calls != wantCalls {
				t.Errorf("%d upstream calls, want %d", calls, wantCalls)
			}
		})
	}
}

// TestInstantFailuresStayLocal: a kept failure is given again by the replica that got it,
// never through the store: the other replica asks upstream itself.
func TestInstantFailuresStayLocal(t *testing.T) {
	srv := storetest.Start(t)
	errOver := errors.New("over the execution limit")
	now := base.Add(20 * time.Second)
	cs, _ := replicas(t, srv, "ds1", 2, healthyTimeout, Options{Now: func() time.Time { return now }, KeepFailure: func(err error) bool { return errors.Is(err, errOver) }})
	calls := 0
	fail := func(context.Context) (*promclient.Answer, error) { calls++; return nil, errOver }
	var kept *RecentFailure
	for i, tc := range []struct {
		replica, calls int
		reused         bool
	}{{0, 1, false}, {0, 1, true}, {1, 2, false}} {
		_, _, err := cs[tc.replica].Instant(context.Background(), "a", "m", now, time.Minute, fail)
		if !errors.Is(err, errOver) || errors.As(err, &kept) != tc.reused || calls != tc.calls {
			t.Errorf("request %d (replica %d): %v after %d calls; want the failure, given again %v, after %d", i, tc.replica, err, calls, tc.reused, tc.calls)
		}
	}
}

// TestInstantStoreFaults: with the store stopped, instant queries are answered from the
// local cache and upstream, each use of the store counted as failed; once it is back, the
// replicas share again.
func TestInstantStoreFaults(t *testing.T) {
	srv := storetest.Start(t)
	w := &instantWorld{world: &world{now: base.Add(20 * time.Second), seed: 8, series: 3, maxDelay: 4 * time.Minute}, step: time.Minute}
	cs, ps := replicas(t, srv, "ds1", 2, 100*time.Millisecond, Options{Now: w.clock})
	ask := func(what string, c *Cache) Outcome {
		t.Helper()
		before := w.ncalls()
		a, out, err := c.Instant(context.Background(), "a", "m", w.clock(), w.step, w.fetch(w.clock()))
		if err != nil {
			t.Fatalf("%s: the request failed: %v", what, err)
		}
		if made := w.made(t, a); made < 0 || (out == Miss) != (made == before) {
			t.Fatalf("%s: %s with the answer of call %d of %d", what, out, made, w.ncalls())
		}
		return out
	}
	srv.Stop()
	for r, c := range cs {
		if out := ask(fmt.Sprint("stopped, replica ", r), c); out != Miss {
			t.Errorf("stopped, replica %d: %s, want its own fetch", r, out)
		}
		if out := ask(fmt.Sprint("stopped, replica ", r, " again"), c); out != Hit {
			t.Errorf("stopped, replica %d again: %s, want a local hit", r, out)
		}
		if st := c.Stats(); st.StoreErrors != 1 || st.SharedHits != 0 {
			t.Errorf("stopped, replica %d: %d store errors, %d shared hits; want 1 and 0", r, st.StoreErrors, st.SharedHits)
		}
	}
	if ps[0].Peer.Unavailable() == nil {
		t.Error("the peer does not say the store is unavailable")
	}
	srv.Restart()
	deadline := time.Now().Add(45 * time.Second) // beyond the backoff a few failures reach
	for {
		w.advance(2 * time.Minute)
		if ask("recovered, replica 0", cs[0]) == Miss && ask("recovered, replica 1", cs[1]) == SharedHit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replicas did not share again after the store came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestInstantAnswersWithinTheRule: random refreshes of instant panels (fixed seeds), now
// and then for a past time, with late samples. Every answer is one an upstream call made
// that the freshness rule allows for the request (as of that call, for its evaluation
// time), a miss's being the call made for the request itself. With two replicas sharing a
// store, each request goes to either, and some are served from the other's fetch.
func TestInstantAnswersWithinTheRule(t *testing.T) {
	withReplicas(t, testInstantAnswersWithinTheRule)
}

func testInstantAnswersWithinTheRule(t *testing.T, newCaches func(Options) []*Cache) {
	for _, fresh := range []time.Duration{FreshOneStep, 90 * time.Second} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprint("fresh ", fresh, ", seed ", seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 11))
				steps := []time.Duration{15 * time.Second, time.Minute, 5 * time.Minute}
				w := &instantWorld{world: &world{now: base, seed: seed, series: 1 + rng.IntN(5), maxDelay: 8 * time.Minute}, step: steps[rng.IntN(len(steps))]}
				cs := newCaches(Options{Now: w.clock, Fresh: fresh})
				pick := rand.New(rand.NewPCG(seed, 3))
				// allowed is the rule, as the docs give it (docs/configure.md, cacheFreshFor).
				allowed := func(c instantCall, eval, now time.Time) bool {
					if fresh > 0 {
						return now.Sub(c.at) < fresh && eval.Sub(c.eval).Abs() <= fresh
					}
					grid := func(t time.Time) time.Time { return t.Truncate(w.step) }
					return grid(now).Sub(grid(c.at)) <= w.step && grid(eval).Sub(grid(c.eval)).Abs() <= w.step
				}
				hits := map[Outcome]int{}
				for i := range 60 {
					w.advance(time.Duration(rng.IntN(90)) * time.Second)
					now := w.clock()
					eval := now.Add(-time.Duration(rng.IntN(4)/3) * time.Duration(rng.IntN(3)) * w.step) // now and then a past time
					before := w.ncalls()
					a, out, err := cs[pick.IntN(len(cs))].Instant(context.Background(), "a", "m", eval, w.step, w.fetch(eval))
					if err != nil {
						t.Fatal(err)
					}
					hits[out]++
					made := w.made(t, a)
					if made < 0 {
						t.Fatalf("request %d (%s): an answer no upstream call made", i, out)
					}
					w.mu.Lock()
					c := w.calls[made]
					w.mu.Unlock()
					if !allowed(c, eval, now) || (out == Miss) != (made == before) {
						t.Fatalf("request %d at %s for %s (%s): the answer of call %d (at %s for %s) of %d", i, now.Format(time.TimeOnly), eval.Format(time.TimeOnly), out, made, c.at.Format(time.TimeOnly), c.eval.Format(time.TimeOnly), w.ncalls())
					}
				}
				if hits[Hit]+hits[SharedHit] == 0 || (len(cs) > 1 && hits[SharedHit] == 0) {
					t.Errorf("outcomes %v: the rule (or the store) was never exercised", hits)
				}
			})
		}
	}
}

// TestFourReplicasCostOneInstantLoad: four replicas refresh the same dashboard of instant
// panels together, every 45 s for 10 minutes: their upstream calls are at most 1.1 times
// one replica's alone (without the store, four times: logged).
func TestFourReplicasCostOneInstantLoad(t *testing.T) {
	srv := storetest.Start(t)
	w := &instantWorld{world: &world{now: base.Add(5 * time.Second), seed: 12, series: 4, maxDelay: 2 * time.Minute}, step: time.Minute}
	load := func(cs []*Cache) int {
		w.mu.Lock()
		w.now, w.calls = base.Add(5*time.Second), nil
		w.mu.Unlock()
		for range 14 {
			var wg sync.WaitGroup
			for _, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for p := range 8 {
						now := w.clock()
						if _, _, err := c.Instant(context.Background(), "a", fmt.Sprint("panel", p), now, w.step, w.fetch(now)); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
			w.advance(45 * time.Second)
		}
		return w.ncalls()
	}
	alone := load([]*Cache{New(Options{Now: w.clock})})
	var apart []*Cache
	for range 4 {
		apart = append(apart, New(Options{Now: w.clock}))
	}
	unshared := load(apart)
	cs, _ := replicas(t, srv, "ds1", 4, healthyTimeout, Options{Now: w.clock})
	four := load(cs)
	var shared int64
	for _, c := range cs {
		shared += c.Stats().SharedHits
	}
	t.Logf("upstream calls: one replica %d, four sharing a store %d (%d shared hits), four without it %d", alone, four, shared, unshared)
	if alone == 0 || float64(four) > 1.1*float64(alone) {
		t.Errorf("four replicas made %d upstream calls, one alone %d: want at most 1.1×", four, alone)
	}
}
