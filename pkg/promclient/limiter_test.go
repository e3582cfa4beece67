package promclient

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// maxInWindow is the most admissions in any half-open window [t, t+w): the busiest such
// window starts at an admission, so checking those covers every window.
func maxInWindow(times []time.Time, w time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i := range times {
		j := i
		for j < len(times) && times[j].Before(times[i].Add(w)) {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// arrival is one request of a generated load: when it comes (after the start), its cost
// in points, how many requests its flow sent before it, how many queries its flow's
// request holds (0: no flow), and how long it holds its slot once admitted.
type arrival struct {
	at          time.Duration
	cost        int
	depth, size int
	hold        time.Duration
}

func (a arrival) heavy() bool { return a.cost > cheapPoints }

// bulk: a follower or a heavy request, not a lead.
func (a arrival) bulk() bool { return laneOf(a.cost, a.depth) != lead }

// key is the arrival's place in line (see scheduler.acquire), after the start.
func (a arrival) key() time.Duration {
	return a.at + costPenalty(a.cost) + depthPenalty(a.depth) + sizePenalty(a.size)
}

// settled is the earliest the arrival may be admitted, after the start.
func (a arrival) settled() time.Duration { return a.at + settleDelay(laneOf(a.cost, a.depth), a.size) }

// admissions runs the arrivals through s on synctest's fake clock (call it inside
// synctest.Test) and returns when each was admitted, after the start; it checks on the way
// that no more than conc requests, no more than conc less the reserved slots of heavy
// ones, and no more than conc less the leads' slots of followers and heavy ones together,
// were ever in flight.
func admissions(t *testing.T, s *scheduler, arrivals []arrival) []time.Duration {
	t.Helper()
	start := time.Now()
	admitted := make([]time.Duration, len(arrivals))
	var (
		mu                                      sync.Mutex
		inFlight, heavy, bulk, peak, hPek, bPek int
		wg                                      sync.WaitGroup
	)
	for i, a := range arrivals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(a.at)
			release, err := s.acquire(context.Background(), a.cost, place{depth: a.depth, size: a.size})
			if err != nil {
				t.Errorf("acquire without deadline: %v", err)
				return
			}
			mu.Lock()
			admitted[i] = time.Since(start)
			inFlight++
			peak = max(peak, inFlight)
			if a.heavy() {
				heavy++
				hPek = max(hPek, heavy)
			}
			if a.bulk() {
				bulk++
				bPek = max(bPek, bulk)
			}
			mu.Unlock()
			time.Sleep(a.hold)
			mu.Lock()
			inFlight--
			if a.heavy() {
				heavy--
			}
			if a.bulk() {
				bulk--
			}
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	if peak > s.conc {
		t.Errorf("%d in flight, max concurrency %d", peak, s.conc)
	}
	if hPek > s.heavyConc {
		t.Errorf("%d heavy requests in flight, max concurrency %d less %d reserved", hPek, s.conc, s.conc-s.heavyConc)
	}
	if bPek > s.bulkConc {
		t.Errorf("%d followers and heavy requests in flight, max concurrency %d less %d for leads", bPek, s.conc, s.conc-s.bulkConc)
	}
	return admitted
}

// at turns offsets after start into times, for maxInWindow, of the arrivals keep accepts
// (nil: all).
func at(arrivals []arrival, admitted []time.Duration, keep func(arrival) bool) []time.Time {
	var out []time.Time
	for i, d := range admitted {
		if keep == nil || keep(arrivals[i]) {
			out = append(out, t0.Add(d))
		}
	}
	return out
}

// TestSchedulerNoWindowExceedsRate drives the scheduler with random arrival patterns
// (bursts, idle gaps, mixed costs and hold times) from fixed seeds on synctest's fake
// clock, and checks every one-second window of admissions against the rate, and the
// heavy ones' against their share of it.
func TestSchedulerNoWindowExceedsRate(t *testing.T) {
	for _, rps := range []float64{0.5, 1, 2.5, 20, 300} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("rps=%g/seed=%d", rps, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(rps*10)))
					s := newScheduler(rps, 1+rng.IntN(30), time.Now)
					// Bursts separated by idle gaps long enough to "refill" a token bucket.
					arrivals := make([]arrival, int(math.Max(8, 3*rps)))
					offset := time.Duration(0)
					for i := range arrivals {
						if rng.IntN(10) == 0 {
							offset += time.Duration(1+rng.IntN(5)) * time.Second
						} else if rng.IntN(2) == 0 {
							offset += time.Duration(rng.IntN(50)) * time.Millisecond
						}
						cost := 1 + rng.IntN(2000)
						if rng.IntN(3) == 0 {
							cost = 1 // instant queries
						}
						depth := max(0, rng.IntN(8)-3) // half of them their flow's first
						arrivals[i] = arrival{at: offset, cost: cost, depth: depth, size: depth + rng.IntN(12), hold: time.Duration(rng.IntN(300)) * time.Millisecond}
					}
					admitted := admissions(t, s, arrivals)
					allowed := max(1, int(math.Floor(rps)))
					if got := maxInWindow(at(arrivals, admitted, nil), time.Second); got > allowed {
						t.Errorf("%d admissions in one second, rate %g allows %d", got, rps, allowed)
					}
					if got, share := maxInWindow(at(arrivals, admitted, arrival.heavy), time.Second), max(1, allowed-reservedSlots(allowed)); got > share {
						t.Errorf("%d heavy admissions in one second, rate %g leaves them %d", got, rps, share)
					}
					if got, share := maxInWindow(at(arrivals, admitted, arrival.bulk), time.Second), max(1, allowed-leadSlots(allowed)); got > share {
						t.Errorf("%d admissions of followers and heavy requests in one second, rate %g leaves them %d", got, rps, share)
					}
				})
			})
		}
	}
}

// TestSchedulerReserves: a backlog in random bursts (fixed seeds) with protected requests
// arriving at random moments no faster than the share of the rate kept for them, each done
// before the next: every protected request is admitted the moment it arrives, while the
// backlog still uses its whole share. Without a reserve, a burst of the backlog fills the
// window and the protected ones wait up to a second for it to slide.
//   - cheap never waits behind heavy: a backlog of range queries, cheap requests protected;
//   - leads never wait behind followers: a backlog of other panels' later queries (table
//     columns: cheap, deep in their flows) and range queries, one-query panels protected.
func TestSchedulerReserves(t *testing.T) {
	for _, tc := range []struct {
		name      string
		seed      uint64
		conc      func(*rand.Rand) int
		backlog   func(*rand.Rand) arrival // at and hold are set by the test
		reserved  func(n int) int
		inBacklog func(arrival) bool
	}{
		{"cheap before heavy", 17, func(r *rand.Rand) int { return 20 + r.IntN(20) },
			func(r *rand.Rand) arrival { return arrival{cost: cheapPoints + 1 + r.IntN(3000)} },
			reservedSlots, arrival.heavy},
		{"leads before followers", 29, func(r *rand.Rand) int { return 4 + r.IntN(40) },
			func(r *rand.Rand) arrival {
				if r.IntN(3) == 0 {
					return arrival{cost: cheapPoints + 1 + r.IntN(3000), depth: r.IntN(3)}
				}
				return arrival{cost: 1 + r.IntN(cheapPoints), depth: 1 + r.IntN(12)}
			},
			leadSlots, arrival.bulk},
	} {
		for _, rps := range []float64{4, 20, 300} {
			for seed := uint64(1); seed <= 4; seed++ {
				t.Run(fmt.Sprintf("%s/rps=%g/seed=%d", tc.name, rps, seed), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						rng := rand.New(rand.NewPCG(seed, tc.seed))
						s := newScheduler(rps, tc.conc(rng), time.Now)
						n := int(rps)
						var arrivals []arrival
						for range 6 * n { // bursts over about 3 s
							a := tc.backlog(rng)
							a.at, a.hold = time.Duration(rng.IntN(6))*500*time.Millisecond, time.Duration(rng.IntN(10))*time.Millisecond
							arrivals = append(arrivals, a)
						}
						gap := time.Second / time.Duration(tc.reserved(n))
						for at := time.Duration(rng.IntN(300)) * time.Millisecond; at < 5*time.Second; at += gap + time.Duration(rng.IntN(200))*time.Millisecond {
							arrivals = append(arrivals, arrival{at: at, cost: 1 + rng.IntN(cheapPoints), hold: time.Duration(rng.IntN(int(gap/time.Millisecond))) * time.Millisecond})
						}
						admitted := admissions(t, s, arrivals)
						for i, a := range arrivals {
							if !tc.inBacklog(a) && admitted[i] != a.at {
								t.Errorf("protected request arriving at %s admitted at %s", a.at, admitted[i])
							}
						}
						share := n - tc.reserved(n)
						if got := maxInWindow(at(arrivals, admitted, tc.inBacklog), time.Second); got != share {
							t.Errorf("busiest second had %d admissions of the backlog, want its whole share %d", got, share)
						}
					})
				})
			}
		}
	}
}

// TestSchedulerBurstOneQueryPanelsFirst: a dashboard's burst (fixed seeds): range
// queries, table columns and tables' first queries reach the scheduler first, one-query
// panels up to a few milliseconds later, more requests than slots in all. Every
// one-query panel is admitted the moment it arrives (there are fewer of them than slots);
// nothing else is admitted before its settling delay; and the range queries, tables and
// the rest are all admitted in the end.
func TestSchedulerBurstOneQueryPanelsFirst(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 31))
				conc := 8 + rng.IntN(8)
				s := newScheduler(20, conc, time.Now)
				var arrivals []arrival
				for range 2 + rng.IntN(4) { // time series panels
					arrivals = append(arrivals, arrival{at: time.Duration(rng.IntN(2000)) * time.Microsecond, cost: 361 + rng.IntN(1000), hold: time.Duration(500+rng.IntN(3000)) * time.Millisecond})
				}
				for range 2 + rng.IntN(3) { // tables: every column one instant query
					cols := 2 + rng.IntN(8)
					for d := range cols {
						arrivals = append(arrivals, arrival{at: time.Duration(rng.IntN(2000)) * time.Microsecond, cost: 1, depth: d, size: cols, hold: time.Duration(50+rng.IntN(3000)) * time.Millisecond})
					}
				}
				stats := min(conc, 4+rng.IntN(6))
				for range stats {
					arrivals = append(arrivals, arrival{at: time.Duration(2000+rng.IntN(8000)) * time.Microsecond, cost: 1 + rng.IntN(cheapPoints), size: 1, hold: time.Duration(5+rng.IntN(300)) * time.Millisecond})
				}
				admitted := admissions(t, s, arrivals)
				for i, a := range arrivals {
					switch {
					case a.size == 1 && admitted[i] != a.at:
						t.Errorf("one-query panel arriving at %s admitted at %s", a.at, admitted[i])
					case admitted[i] < a.settled():
						t.Errorf("request (cost %d, depth %d of %d) arriving at %s admitted at %s, before its settling delay", a.cost, a.depth, a.size, a.at, admitted[i])
					}
				}
			})
		})
	}
}

// TestSchedulerSettlingCost: alone, a one-query panel's request goes at once, and a range
// query or a table's column waits exactly its settling delay, no more.
func TestSchedulerSettlingCost(t *testing.T) {
	for _, a := range []arrival{
		{cost: 1, size: 1},
		{cost: 1},
		{cost: 1, size: 3},
		{cost: 1, depth: 2, size: 3},
		{cost: 1081, size: 1},
	} {
		synctest.Test(t, func(t *testing.T) {
			got := admissions(t, newScheduler(20, 10, time.Now), []arrival{a})[0]
			if want := settleDelay(laneOf(a.cost, a.depth), a.size); got != want || want > maxSettle {
				t.Errorf("%+v alone admitted after %s, want %s (at most %s)", a, got, want, maxSettle)
			}
		})
	}
	if settleDelay(lead, 1) != 0 || settleDelay(lead, 0) != 0 || settleDelay(heavy, 1) != maxSettle || settleDelay(lead, 3) != 2*sizeStep {
		t.Errorf("settling delays: one-query lead %s, no flow %s, heavy %s, lead of 3 %s", settleDelay(lead, 1), settleDelay(lead, 0), settleDelay(heavy, 1), settleDelay(lead, 3))
	}
}

// TestSchedulerFollowersInDepthOrder: with the one slot busy, the waiting requests of
// several flows go first query first: every flow's first, then every flow's second, and
// a lead that arrives a little later still goes before all second queries.
func TestSchedulerFollowersInDepthOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, hold := oneSlotBusy(t)
		var mu sync.Mutex
		var order []string
		for i, a := range []struct {
			name  string
			depth int
			after time.Duration
		}{{"table-b-2", 1, 0}, {"table-a-3", 2, 0}, {"table-a-2", 1, time.Millisecond}, {"stat", 0, 20 * time.Millisecond}} {
			go func() {
				time.Sleep(a.after + time.Duration(i)*time.Microsecond)
				release, err := s.acquire(context.Background(), 1, place{depth: a.depth, size: 2})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, a.name)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				release()
			}()
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		hold()
		time.Sleep(time.Second)
		if want := []string{"stat", "table-b-2", "table-a-2", "table-a-3"}; !slices.Equal(order, want) {
			t.Errorf("admission order %v, want %v", order, want)
		}
	})
}

// TestFlowDepth: each request sent with a flow's context (or one derived from it) counts
// once per scheduler, from 0, also when they race; without a flow every request is a lead.
func TestFlowDepth(t *testing.T) {
	s, other := newScheduler(-1, 1, time.Now), newScheduler(-1, 1, time.Now)
	if p := flowPlace(context.Background(), s, 1); p != (place{}) {
		t.Errorf("no flow: place %+v, want none", p)
	}
	ctx := WithFlow(context.Background(), 7)
	derived, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ctx
			if i%2 == 0 {
				c = derived
			}
			p := flowPlace(c, s, 1)
			mu.Lock()
			seen[p.depth] = true
			if p.size != 7 {
				t.Errorf("place %+v: the flow's size is 7", p)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for d := range 50 {
		if !seen[d] {
			t.Errorf("depth %d never given out: %v", d, seen)
		}
	}
	if p := flowPlace(ctx, other, 1); p.depth != 0 {
		t.Errorf("the flow's first request to another scheduler (region): depth %d, want 0", p.depth)
	}
	if p := flowPlace(WithFlow(ctx, 1), s, 1); p != (place{depth: 0, size: 1}) {
		t.Errorf("a new flow made from another: place %+v, want the first of 1", p)
	}
}

// TestSchedulerHeavyNotStarved: a flood of cheap requests, twice the rate for 5 s, with a
// few heavy ones at random moments (fixed seeds): each heavy request goes before every
// cheap one that joined the line after it (a later key), so it waits at most for the cheap
// ones ahead of it, at the full rate: ⌈(ahead+1)/n⌉ windows.
func TestSchedulerHeavyNotStarved(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 23))
				const rps, conc = 20, 10
				s := newScheduler(rps, conc, time.Now)
				var arrivals []arrival
				for i := range 2 * rps * 5 {
					at := time.Duration(i) * time.Second / (2 * rps)
					arrivals = append(arrivals, arrival{at: at, cost: 1 + rng.IntN(cheapPoints), hold: time.Duration(rng.IntN(100)) * time.Millisecond})
				}
				for range 4 {
					arrivals = append(arrivals, arrival{at: time.Duration(rng.IntN(5000)) * time.Millisecond, cost: cheapPoints + 1 + rng.IntN(3000), hold: time.Duration(rng.IntN(2000)) * time.Millisecond})
				}
				admitted := admissions(t, s, arrivals)
				for h, a := range arrivals {
					if !a.heavy() {
						continue
					}
					ahead := 0
					for c, o := range arrivals {
						switch {
						case o.key() < a.key() && admitted[c] >= a.at:
							ahead++
						case o.heavy():
						case o.key() > a.key() && admitted[c] < admitted[h]:
							t.Errorf("heavy request (key %s) admitted at %s after a cheap one with the later key %s, admitted at %s", a.key(), admitted[h], o.key(), admitted[c])
						}
					}
					bound := time.Duration((ahead+1+rps-1)/rps) * time.Second
					if waited := admitted[h] - a.at; waited > bound {
						t.Errorf("heavy request arriving at %s waited %s behind %d requests ahead of it, more than %s", a.at, waited, ahead, bound)
					}
				}
			})
		})
	}
}

// TestSchedulerUsesItsRate: a backlog is served at the full rate, not below it (a
// limiter that admitted one request per second would pass the upper-bound test).
func TestSchedulerUsesItsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(20, 100, time.Now)
		start := time.Now()
		var mu sync.Mutex
		var admitted []time.Time
		var wg sync.WaitGroup
		for range 60 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, err := s.acquire(context.Background(), 1, place{})
				if err != nil {
					t.Error(err)
					return
				}
				release()
				mu.Lock()
				admitted = append(admitted, time.Now())
				mu.Unlock()
			}()
		}
		wg.Wait()
		if got := maxInWindow(admitted, time.Second); got != 20 {
			t.Errorf("busiest second had %d admissions, want exactly 20", got)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("60 requests at 20/s took %s, want 2s (three full windows from t=0)", took)
		}
	})
}

// TestSchedulerCheapFirst: with the one slot busy, a cheap request that arrives shortly
// after heavy ones is admitted before them; a heavy request that has waited longer than
// the cost penalty is not overtaken.
func TestSchedulerCheapFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, hold := oneSlotBusy(t)
		var mu sync.Mutex
		var order []string
		enqueue := func(name string, after time.Duration, cost int) {
			go func() {
				time.Sleep(after)
				release, err := s.acquire(context.Background(), cost, place{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				release()
			}()
		}
		enqueue("old-heavy", 0, 5000)
		enqueue("heavy", 3*time.Second, 5000)
		enqueue("range-60", 3100*time.Millisecond, 60)
		enqueue("instant", 3200*time.Millisecond, 1)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		hold()
		time.Sleep(time.Second)
		want := []string{"old-heavy", "instant", "range-60", "heavy"}
		if !slices.Equal(order, want) {
			t.Errorf("admission order %v, want %v", order, want)
		}
	})
}

// TestSchedulerRefusesWhatWouldMissItsDeadline: the first in line is refused at once
// when its turn comes after its deadline; one further back is refused when the deadline
// passes while it waits. Both errors name the setting to raise.
func TestSchedulerRefusesWhatWouldMissItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(1, 10, time.Now)
		if _, err := s.acquire(context.Background(), 1, place{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := s.acquire(ctx, 1, place{})
		var le *LimitError
		if !errors.As(err, &le) || time.Since(start) != 0 {
			t.Fatalf("err %v after %s, want an immediate *LimitError", err, time.Since(start))
		}
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "raise requestsPerSecond") {
			t.Errorf("message %q does not name the setting", err)
		}

		// Queue a patient request first, then one with a short deadline behind it: it is
		// refused when it reaches the front at 1s, as its turn (2s) is past its deadline.
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := s.acquire(context.Background(), 1, place{}); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel2()
		_, err = s.acquire(ctx2, 1, place{})
		if !errors.As(err, &le) || le.Waited != time.Second {
			t.Errorf("err %v, want a *LimitError after waiting 1s", err)
		}
		<-done

		// Behind a slot that is never released, the deadline passes while it waits.
		c := newScheduler(-1, 1, time.Now)
		if _, err := c.acquire(context.Background(), 1, place{}); err != nil {
			t.Fatal(err)
		}
		ctx4, cancel4 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel4()
		if _, err := c.acquire(ctx4, 1, place{}); !errors.As(err, &le) || le.Waited != 1500*time.Millisecond || !strings.Contains(err.Error(), "no request rate limit, maxConcurrency 1") {
			t.Errorf("err %v, want a *LimitError after 1.5s naming maxConcurrency", err)
		}

		// Cancellation is not the limiter's doing and is reported as such.
		ctx3, cancel3 := context.WithCancel(context.Background())
		cancel3()
		if _, err := s.acquire(ctx3, 1, place{}); !errors.Is(err, context.Canceled) || errors.As(err, &le) {
			t.Errorf("canceled: err %v", err)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestClientNoBurstAfterIdle is the regression for the token bucket: after a long idle
// moment, twice the rate of requests at once must not all go out within one second.
func TestClientNoBurstAfterIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []time.Time
		transport := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, time.Now())
			mu.Unlock()
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(okBody)), Request: r}, nil
		})
		u, _ := url.Parse("http://127.0.0.1:1")
		c, err := New(Options{BaseURL: u, Transport: transport, QueryRPS: 20, MaxConcurrency: 30})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		var wg sync.WaitGroup
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Query(context.Background(), "up", t0, 0, nil); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got := maxInWindow(sent, time.Second); got > 20 {
			t.Errorf("%d requests sent within one second at requestsPerSecond 20", got)
		}
	})
}

func TestRequestCost(t *testing.T) {
	for _, tc := range []struct {
		p    url.Values
		want int
	}{
		{url.Values{"query": {"up"}, "time": {"100"}}, 1},
		{url.Values{"start": {"0"}, "end": {"3600"}, "step": {"60"}}, 61},
		{url.Values{"start": {"0"}, "end": {"21600"}, "step": {"15"}}, 1441},
		{url.Values{"start": {"10"}, "end": {"0"}, "step": {"1"}}, 1},
		{url.Values{"start": {"0"}, "end": {"1e300"}, "step": {"1e-300"}}, math.MaxInt32 + 1},
	} {
		if got := requestCost(tc.p); got != tc.want {
			t.Errorf("requestCost(%v) = %d, want %d", tc.p, got, tc.want)
		}
	}
}

// TestSchedulerNext: which waiter goes next, for states built by hand: the earliest key
// among those that may take a slot; heavy requests only while they hold fewer than conc
// less the reserved slots, followers and heavy ones only while together they hold fewer
// than conc less the leads' slots; a lighter lane first while a heavier one waits for its
// share of the rate; nobody when all slots are taken.
func TestSchedulerNext(t *testing.T) {
	lanesByName := map[string]lane{"lead": lead, "follower": follower, "heavy": heavy}
	// parse reads "lane:ms ..." into lanes and offsets after t0.
	parse := func(spec string) (out []struct {
		lane lane
		at   time.Time
	}) {
		for _, f := range strings.Fields(spec) {
			name, ms, _ := strings.Cut(f, ":")
			var n int
			fmt.Sscan(ms, &n)
			out = append(out, struct {
				lane lane
				at   time.Time
			}{lanesByName[name], t0.Add(time.Duration(n) * time.Millisecond)})
		}
		return out
	}
	for _, tc := range []struct {
		name                            string
		conc, inFlight, bulkIn, heavyIn int
		sent                            string // admissions in the last window at 4/s, expiring at ms
		waiting                         string // waiters' lanes and keys, ms
		want                            string
	}{
		{"idle, earliest key first", 10, 0, 0, 0, "", "lead:50 heavy:20", "heavy 20"},
		{"cheap key earlier", 10, 0, 0, 0, "", "lead:10 lead:30 heavy:20", "lead 10"},
		{"heavy at its cap: the later cheap one goes", 10, 5, 5, 5, "", "lead:90 heavy:20", "lead 90"},
		{"heavy at its cap, a follower may still go", 10, 5, 5, 5, "", "follower:90 heavy:20", "follower 90"},
		{"heavy at its cap, no other waiter", 10, 5, 5, 5, "", "heavy:20", "none"},
		{"heavy below its cap", 10, 6, 4, 4, "", "heavy:20", "heavy 20"},
		{"all slots taken by leads", 10, 10, 0, 0, "", "lead:1 heavy:2", "none"},
		{"reserved slots held by leads, heavy slots free", 10, 5, 0, 0, "", "lead:30 heavy:20", "heavy 20"},
		{"followers at the bulk cap: the later lead goes", 10, 8, 8, 0, "", "lead:90 follower:20", "lead 90"},
		{"followers and heavy at the bulk cap: neither goes", 10, 8, 8, 3, "", "follower:20 heavy:10", "none"},
		{"bulk below its cap", 10, 7, 7, 2, "", "follower:20 lead:30", "follower 20"},
		{"one slot: nothing is reserved", 1, 0, 0, 0, "", "heavy:20", "heavy 20"},
		{"three slots: one reserved for cheap, none for leads", 3, 2, 2, 2, "", "heavy:20 follower:30", "follower 30"},
		{"heavy ones used their share of the rate: the later cheap one goes", 10, 0, 0, 0, "heavy:100 heavy:200", "lead:90 heavy:20", "lead 90"},
		{"heavy share used, no cheap waiter: heavy waits its turn", 10, 0, 0, 0, "heavy:100 heavy:200", "heavy:20", "heavy 20"},
		{"one heavy send: their share is not used up", 10, 0, 0, 0, "lead:50 heavy:100", "lead:90 heavy:20", "heavy 20"},
		{"bulk share used by followers and heavy: the later lead goes", 10, 0, 0, 0, "follower:100 heavy:200 follower:300", "lead:90 follower:20", "lead 90"},
		{"bulk share used, heavy share not: followers wait with heavy", 10, 0, 0, 0, "follower:100 follower:200 follower:300", "follower:20 heavy:10", "heavy 10"},
		{"window full for both until the same moment: earliest key", 10, 0, 0, 0, "heavy:100 heavy:200 lead:300 lead:400", "lead:90 heavy:20", "heavy 20"},
		{"window full, heavy share freed later: cheap first", 10, 0, 0, 0, "lead:100 lead:200 heavy:300 heavy:400", "lead:90 heavy:20", "lead 90"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(4, tc.conc, func() time.Time { return t0 })
			s.inFlight, s.bulkIn, s.heavyIn = tc.inFlight, tc.bulkIn, tc.heavyIn
			for _, sent := range parse(tc.sent) { // sent a second before they expire, in order
				s.sends.add(sent.at.Add(-time.Second))
				if sent.lane != lead {
					s.bulkSends.add(sent.at.Add(-time.Second))
				}
				if sent.lane == heavy {
					s.heavySends.add(sent.at.Add(-time.Second))
				}
			}
			for _, w := range parse(tc.waiting) {
				s.seq++
				wt := &waiter{key: w.at, seq: s.seq, lane: w.lane}
				heap.Push(s.queueOf(wt), wt)
			}
			got := "none"
			if w := s.next(); w != nil {
				got = fmt.Sprintf("%s %d", [lanes]string{"lead", "follower", "heavy"}[w.lane], w.key.Sub(t0).Milliseconds())
			}
			if got != tc.want {
				t.Errorf("next = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSchedulerReservesSlotsForCheap: range queries arriving first take every slot they
// may; an instant query arriving after them is admitted while they all still hold theirs
// (the clock does not move), and the heavy ones left over wait.
func TestSchedulerReservesSlotsForCheap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const conc = 10
		s := newScheduler(20, conc, time.Now)
		var (
			mu       sync.Mutex
			admitted []string
			releases []func()
		)
		acquire := func(name string, cost int) {
			release, err := s.acquire(context.Background(), cost, place{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			admitted = append(admitted, name)
			releases = append(releases, release)
			mu.Unlock()
		}
		for i := range conc {
			go acquire(fmt.Sprintf("range-%d", i), 361)
		}
		time.Sleep(maxSettle) // the range queries' settling delay
		synctest.Wait()
		go acquire("instant", 1)
		synctest.Wait()
		mu.Lock()
		got, first := slices.Clone(admitted), slices.Clone(releases)
		mu.Unlock()
		if len(got) != conc-reservedSlots(conc)+1 || got[len(got)-1] != "instant" {
			t.Fatalf("admitted %v: want %d range queries, then the instant one", got, conc-reservedSlots(conc))
		}
		for _, r := range first {
			r()
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(admitted) != conc+1 {
			t.Errorf("after the releases %d admitted, want all %d", len(admitted), conc+1)
		}
		for _, r := range releases[len(got):] {
			r()
		}
	})
}

// A lane's head still settling must not hold back a lane-mate that has settled while
// slots and rate are free: a one-query panel's short range (59 points, cheap, key +118 ms)
// arriving together with a five-query panel's first request (key +42 ms, settles 40 ms)
// goes at once.
func TestSchedulerSettlingHeadDoesNotHoldReadyLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := admissions(t, newScheduler(20, 10, time.Now), []arrival{
			{cost: 1, size: 5, hold: time.Second},
			{at: time.Millisecond, cost: 59, size: 1, hold: time.Second},
		})
		if got[1] != time.Millisecond {
			t.Errorf("one-query panel on an idle limiter admitted after %s, want at once (the other lead settled at %s)", got[1], got[0])
		}
	})
}

// Same in the heavy lane: an old heavy request that has settled waits for a newer one
// with an earlier key to settle, though slots and rate are free.
func TestSchedulerSettlingHeadDoesNotHoldReadyHeavy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := admissions(t, newScheduler(20, 10, time.Now), []arrival{
			{cost: 5000, size: 1, hold: time.Second},
			{at: 39 * time.Millisecond, cost: 100, size: 1, hold: time.Second},
		})
		if got[0] != maxSettle {
			t.Errorf("heavy request admitted at %s, want at its settling time %s", got[0], maxSettle)
		}
	})
}

// A request whose only wait is its settling delay is not refused as if the limiter held
// it: the limiter is idle, raising its settings would change nothing.
func TestSchedulerSettlingIsNeverARefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(20, 10, time.Now)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		release, err := s.acquire(ctx, 1, place{depth: 1, size: 2})
		if err != nil {
			t.Fatalf("idle limiter, 20 ms left: %v", err)
		}
		release()
	})
}

// A retry of a one-query panel's request is the same request, still its flow's lead: it
// may take the slot kept for leads while followers hold all of theirs.
func TestClientRetryKeepsItsPlaceInItsFlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		transport := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 1 {
				return &http.Response{StatusCode: 429, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"status":"error","errorType":"too_many_requests","error":"Too many concurrent requests"}`)), Request: r}, nil
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(okBody)), Request: r}, nil
		})
		u, _ := url.Parse("http://127.0.0.1:1")
		c, err := New(Options{BaseURL: u, Transport: transport, QueryRPS: -1, MaxConcurrency: 4,
			Sleep: func(context.Context, time.Duration) error { return nil }, Jitter: func() float64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		s := c.classes[classQuery].sched
		for range s.bulkConc { // another panel's columns hold every slot not kept for leads
			release, err := s.acquire(context.Background(), 1, place{depth: 1, size: 9})
			if err != nil {
				t.Fatal(err)
			}
			defer release()
		}
		ctx, cancel := context.WithTimeout(WithFlow(context.Background(), 1), 2*time.Second)
		defer cancel()
		if err := c.Query(ctx, "up", t0, 0, nil); err != nil {
			t.Errorf("stat panel's query, retried once after a 429: %v", err)
		}
	})
}

// A flow's first cheap request is its lead even when the panel's range query reached the
// scheduler first: cheap and heavy requests are counted apart.
func TestFlowFirstCheapRequestIsLead(t *testing.T) {
	s := newScheduler(-1, 4, time.Now)
	ctx := WithFlow(context.Background(), 2)
	_ = flowPlace(ctx, s, 361) // the panel's range query (heavy)
	if p := flowPlace(ctx, s, 1); laneOf(1, p.depth) != lead {
		t.Errorf("the flow's first cheap request, after its range query: lane %d, want lead", laneOf(1, p.depth))
	}
}

// oneSlotBusy is an unpaced scheduler with one slot, taken: what arrives next waits in
// line until hold is called.
func oneSlotBusy(t *testing.T) (s *scheduler, hold func()) {
	t.Helper()
	s = newScheduler(-1, 1, time.Now)
	hold, err := s.acquire(context.Background(), 1, place{})
	if err != nil {
		t.Fatal(err)
	}
	return s, hold
}
