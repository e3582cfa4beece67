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

// TestSchedulerNoWindowExceedsRate drives the scheduler with random arrival patterns
// (bursts, idle gaps, mixed costs and hold times) from fixed seeds on synctest's fake
// clock, and checks every one-second window of admissions against the rate.
func TestSchedulerNoWindowExceedsRate(t *testing.T) {
	for _, rps := range []float64{0.5, 1, 2.5, 20, 300} {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("rps=%g/seed=%d", rps, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(rps*10)))
					conc := 1 + rng.IntN(30)
					s := newScheduler(rps, conc, time.Now)
					var (
						mu              sync.Mutex
						admitted        []time.Time
						inFlight, heavy int
						peak, heavyPeak int
						wg              sync.WaitGroup
					)
					// Bursts separated by idle gaps long enough to "refill" a token bucket.
					total := int(math.Max(8, 3*rps))
					offset := time.Duration(0)
					for i := 0; i < total; i++ {
						if rng.IntN(10) == 0 {
							offset += time.Duration(1+rng.IntN(5)) * time.Second
						} else if rng.IntN(2) == 0 {
							offset += time.Duration(rng.IntN(50)) * time.Millisecond
						}
						cost := 1 + rng.IntN(2000)
						if rng.IntN(3) == 0 {
							cost = 1 // instant queries
						}
						arrive, hold := offset, time.Duration(rng.IntN(300))*time.Millisecond
						wg.Add(1)
						go func() {
							defer wg.Done()
							time.Sleep(arrive)
							release, err := s.acquire(context.Background(), cost)
							if err != nil {
								t.Errorf("acquire without deadline: %v", err)
								return
							}
							isHeavy := cost > cheapPoints
							mu.Lock()
							admitted = append(admitted, time.Now())
							inFlight++
							peak = max(peak, inFlight)
							if isHeavy {
								heavy++
								heavyPeak = max(heavyPeak, heavy)
							}
							mu.Unlock()
							time.Sleep(hold)
							mu.Lock()
							inFlight--
							if isHeavy {
								heavy--
							}
							mu.Unlock()
							release()
						}()
					}
					wg.Wait()
					if len(admitted) != total {
						t.Fatalf("%d of %d admitted", len(admitted), total)
					}
					allowed := max(1, int(math.Floor(rps)))
					if got := maxInWindow(admitted, time.Second); got > allowed {
						t.Errorf("%d admissions in one second, rate %g allows %d", got, rps, allowed)
					}
					if peak > conc {
						t.Errorf("%d in flight, max concurrency %d", peak, conc)
					}
					if heavyPeak > conc-reservedSlots(conc) {
						t.Errorf("%d heavy requests in flight, max concurrency %d less %d reserved", heavyPeak, conc, reservedSlots(conc))
					}
				})
			})
		}
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
				release, err := s.acquire(context.Background(), 1)
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
		s := newScheduler(-1, 1, time.Now)
		hold, err := s.acquire(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []string
		enqueue := func(name string, after time.Duration, cost int) {
			go func() {
				time.Sleep(after)
				release, err := s.acquire(context.Background(), cost)
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
		if _, err := s.acquire(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := s.acquire(ctx, 1)
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
			if _, err := s.acquire(context.Background(), 1); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel2()
		_, err = s.acquire(ctx2, 1)
		if !errors.As(err, &le) || le.Waited != time.Second {
			t.Errorf("err %v, want a *LimitError after waiting 1s", err)
		}
		<-done

		// Behind a slot that is never released, the deadline passes while it waits.
		c := newScheduler(-1, 1, time.Now)
		if _, err := c.acquire(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		ctx4, cancel4 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel4()
		if _, err := c.acquire(ctx4, 1); !errors.As(err, &le) || le.Waited != 1500*time.Millisecond || !strings.Contains(err.Error(), "no request rate limit, maxConcurrency 1") {
			t.Errorf("err %v, want a *LimitError after 1.5s naming maxConcurrency", err)
		}

		// Cancellation is not the limiter's doing and is reported as such.
		ctx3, cancel3 := context.WithCancel(context.Background())
		cancel3()
		if _, err := s.acquire(ctx3, 1); !errors.Is(err, context.Canceled) || errors.As(err, &le) {
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
// less the reserved slots; nobody when all slots are taken.
func TestSchedulerNext(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name                    string
		conc, inFlight, heavyIn int
		cheap, heavy            []int // waiters' keys, ms
		want                    string
	}{
		{"idle, earliest key first", 10, 0, 0, []int{50}, []int{20}, "heavy 20"},
		{"cheap key earlier", 10, 0, 0, []int{10, 30}, []int{20}, "cheap 10"},
		{"heavy at its cap: the later cheap one goes", 10, 5, 5, []int{90}, []int{20}, "cheap 90"},
		{"heavy at its cap, no cheap waiter", 10, 5, 5, nil, []int{20}, "none"},
		{"heavy below its cap", 10, 6, 4, nil, []int{20}, "heavy 20"},
		{"all slots taken by cheap ones", 10, 10, 0, []int{1}, []int{2}, "none"},
		{"reserved slots held by cheap ones, heavy slots free", 10, 5, 0, []int{30}, []int{20}, "heavy 20"},
		{"one slot: nothing is reserved", 1, 0, 0, nil, []int{20}, "heavy 20"},
		{"three slots: one reserved", 3, 2, 2, nil, []int{20}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler(-1, tc.conc, func() time.Time { return t0 })
			s.inFlight, s.heavyInFlight = tc.inFlight, tc.heavyIn
			for i, keys := range [][]int{tc.cheap, tc.heavy} {
				for _, k := range keys {
					s.seq++
					w := &waiter{key: at(k), seq: s.seq, heavy: i == 1}
					heap.Push(s.queueOf(w), w)
				}
			}
			got := "none"
			if w := s.next(); w != nil {
				got = fmt.Sprintf("%s %d", map[bool]string{false: "cheap", true: "heavy"}[w.heavy], w.key.Sub(t0).Milliseconds())
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
