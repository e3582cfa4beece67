package promclient

import (
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
// in points and how long it holds its slot once admitted.
type arrival struct {
	at   time.Duration
	cost int
	hold time.Duration
}

func (a arrival) heavy() bool { return a.cost > cheapPoints }

// admissions runs the arrivals through s on synctest's fake clock (call it inside
// synctest.Test) and returns when each was admitted, after the start; it checks on the way
// that no more than conc requests, and no more than the shared slots of heavy ones, were
// ever in flight.
func admissions(t *testing.T, s *scheduler, arrivals []arrival) []time.Duration {
	t.Helper()
	start := time.Now()
	admitted := make([]time.Duration, len(arrivals))
	var (
		mu                    sync.Mutex
		inFlight, heavy, peak int
		heavyPeak             int
		wg                    sync.WaitGroup
	)
	for i, a := range arrivals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(a.at)
			release, err := s.acquire(context.Background(), a.cost)
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
				heavyPeak = max(heavyPeak, heavy)
			}
			mu.Unlock()
			time.Sleep(a.hold)
			mu.Lock()
			inFlight--
			if a.heavy() {
				heavy--
			}
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	if peak > s.conc {
		t.Errorf("%d in flight, max concurrency %d", peak, s.conc)
	}
	if heavyPeak > s.conc-s.conc/2 {
		t.Errorf("%d heavy requests in flight, max concurrency %d less %d reserved", heavyPeak, s.conc, s.conc/2)
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
// heavy ones' against their half of it.
func TestSchedulerNoWindowExceedsRate(t *testing.T) {
	for _, rps := range []float64{0.5, 1, 2.5, 5, 20, 300} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("rps=%g/seed=%d", rps, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(rps*10)))
					s := newScheduler(rps, 1+rng.IntN(30))
					// Bursts separated by idle gaps long enough to refill the buckets.
					arrivals := make([]arrival, int(math.Max(8, 4*rps)))
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
						arrivals[i] = arrival{at: offset, cost: cost, hold: time.Duration(rng.IntN(300)) * time.Millisecond}
					}
					admitted := admissions(t, s, arrivals)
					allowed := max(1, int(math.Floor(rps)))
					if got := maxInWindow(at(arrivals, admitted, nil), time.Second); got > allowed {
						t.Errorf("%d admissions in one second, rate %g allows %d", got, rps, allowed)
					}
					if rps < 1 {
						if got := maxInWindow(at(arrivals, admitted, nil), time.Duration(float64(time.Second)/rps)); got > 1 {
							t.Errorf("%d admissions within 1/rps at rate %g", got, rps)
						}
					}
					if got, share := maxInWindow(at(arrivals, admitted, arrival.heavy), time.Second), allowed-allowed/2; got > share {
						t.Errorf("%d heavy admissions in one second, rate %g leaves them %d", got, rps, share)
					}
				})
			})
		}
	}
}

// TestSchedulerUsesItsRate: a backlog fills the busiest second to the rate, not below it
// (a limiter that admitted one request per second would pass the upper-bound test).
func TestSchedulerUsesItsRate(t *testing.T) {
	for _, rps := range []float64{1, 5, 20, 300} {
		t.Run(fmt.Sprint(rps), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				arrivals := make([]arrival, int(3*rps))
				for i := range arrivals {
					arrivals[i] = arrival{cost: 1}
				}
				got := maxInWindow(at(arrivals, admissions(t, newScheduler(rps, 1000), arrivals), nil), time.Second)
				if got != int(rps) {
					t.Errorf("busiest second had %d admissions, want exactly %g", got, rps)
				}
			})
		})
	}
}

// TestSchedulerCheapShare: a backlog of range queries that saturates their slots and their
// half of the rate, with cheap requests arriving at random moments no faster than the
// reserve refills, each held a second: every cheap request is admitted the moment it
// arrives, while the backlog still uses its whole share.
func TestSchedulerCheapShare(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 24))
				const rps, conc = 20, 10
				var arrivals []arrival
				for range 150 {
					arrivals = append(arrivals, arrival{at: time.Duration(rng.IntN(3000)) * time.Millisecond, cost: cheapPoints + 1 + rng.IntN(3000),
						hold: time.Duration(rng.IntN(100)) * time.Millisecond})
				}
				// The reserve holds 5 slots and refills 6 tokens a second: one cheap request
				// every 200 ms or more, each done a second later, needs at most 5 of each.
				for next := time.Duration(0); next < 5*time.Second; next += time.Duration(200+rng.IntN(300)) * time.Millisecond {
					arrivals = append(arrivals, arrival{at: next, cost: 1 + rng.IntN(cheapPoints), hold: time.Second})
				}
				admitted := admissions(t, newScheduler(rps, conc), arrivals)
				for i, a := range arrivals {
					if !a.heavy() && admitted[i] != a.at {
						t.Errorf("cheap request arriving at %s admitted at %s", a.at, admitted[i])
					}
				}
				if got := maxInWindow(at(arrivals, admitted, arrival.heavy), time.Second); got != rps/2 {
					t.Errorf("the backlog's busiest second had %d admissions, want its whole share %d", got, rps/2)
				}
			})
		})
	}
}

// TestSchedulerReservesSlotsForCheap: range queries arriving first take every slot they
// may; an instant query arriving after them is admitted while they all still hold theirs
// (the clock does not move), and the heavy ones left over wait for their slots.
func TestSchedulerReservesSlotsForCheap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const conc = 10
		s := newScheduler(20, conc)
		var (
			mu       sync.Mutex
			admitted []string
			releases []func()
		)
		acquire := func(name string, cost int) {
			release, err := s.acquire(context.Background(), cost)
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
		synctest.Wait()
		go acquire("instant", 1)
		synctest.Wait()
		mu.Lock()
		got, first := slices.Clone(admitted), slices.Clone(releases)
		mu.Unlock()
		if len(got) != conc/2+1 || got[len(got)-1] != "instant" {
			t.Fatalf("admitted %v: want %d range queries, then the instant one", got, conc/2)
		}
		for _, r := range first {
			r()
		}
		time.Sleep(time.Second) // the heavy ones' tokens refill
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

// TestSchedulerIdleSendsAtOnce: on an idle scheduler a lone request goes without delay,
// cheap or heavy, at first and again after an idle moment, even with a deadline a few
// milliseconds off.
func TestSchedulerIdleSendsAtOnce(t *testing.T) {
	for _, rps := range []float64{-1, 0.5, 1, 2.5, 20, 300} {
		for _, conc := range []int{1, 2, 10} {
			for _, cost := range []int{1, 5000} {
				t.Run(fmt.Sprintf("rps=%g/conc=%d/cost=%d", rps, conc, cost), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						s := newScheduler(rps, conc)
						idle := time.Duration(float64(time.Second) / min(1, math.Abs(rps)))
						for round := range 3 {
							ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
							start := time.Now()
							release, err := s.acquire(ctx, cost)
							cancel()
							if err != nil || time.Since(start) != 0 {
								t.Fatalf("round %d: err %v after %s, want admitted at once", round, err, time.Since(start))
							}
							release()
							time.Sleep(idle)
						}
					})
				})
			}
		}
	}
}

// TestSchedulerDeadlinesAndCancellation: a request whose turn at the rate comes after its
// deadline is refused at once, one whose deadline passes while it waits for a slot when it
// passes, both naming the settings to raise; a cancellation ends the wait at once and is
// reported as such. No refused or canceled request keeps a slot or a token.
func TestSchedulerDeadlinesAndCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(1, 1)
		release, err := s.acquire(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = s.acquire(ctx, 1)
		var le *LimitError
		if !errors.As(err, &le) || time.Since(start) != 0 || le.RequestsPerSecond != 1 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v after %s, want an immediate *LimitError of requestsPerSecond 1", err, time.Since(start))
		}

		// Canceled while waiting for the token: back at once, and the token is still there.
		ctx2, cancel2 := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel2)
		start = time.Now()
		if _, err := s.acquire(ctx2, 1); !errors.Is(err, context.Canceled) || errors.As(err, &le) || time.Since(start) != 300*time.Millisecond {
			t.Errorf("canceled at 300 ms while waiting for the rate: err %v after %s", err, time.Since(start))
		}
		start = time.Now()
		hold, err := s.acquire(context.Background(), 1)
		if err != nil || time.Since(start) != 700*time.Millisecond {
			t.Fatalf("next request: err %v after %s, want sent when the token comes, 1 s after the first", err, time.Since(start))
		}

		// Behind the one slot, held: a deadline passes while it waits, a cancellation ends it.
		ctx3, cancel3 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel3()
		if _, err := s.acquire(ctx3, 1); !errors.As(err, &le) || le.Waited != 1500*time.Millisecond || le.MaxConcurrency != 1 {
			t.Errorf("err %v, want a *LimitError after 1.5 s naming maxConcurrency 1", err)
		}
		ctx4, cancel4 := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel4)
		start = time.Now()
		if _, err := s.acquire(ctx4, 5000); !errors.Is(err, context.Canceled) || errors.As(err, &le) || time.Since(start) != 100*time.Millisecond {
			t.Errorf("canceled at 100 ms while waiting for a slot: err %v after %s", err, time.Since(start))
		}
		hold()
		release, err = s.acquire(context.Background(), 5000)
		if err != nil {
			t.Fatal(err)
		}
		release()
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestClientNoBurstAfterIdle: after a long idle moment, twice the rate of requests at
// once must not all go out within one second.
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
