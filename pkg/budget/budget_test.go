package budget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestChargeLargerThanBudgetFailsAtOnce(t *testing.T) {
	b := New(100, time.Minute, "jsonData.memoryBudgetMiB")
	var a Account
	start := time.Now()
	err := a.Charge(context.Background(), b, 101)
	var be *Error
	if !errors.As(err, &be) || be.Crowded || !strings.Contains(err.Error(), "narrow the query") || !strings.Contains(err.Error(), "jsonData.memoryBudgetMiB") {
		t.Fatalf("err %v, want an immediate budget error that says to narrow the query", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Error("it waited")
	}
	if used, _, _ := b.Stats(); used != 0 {
		t.Errorf("used %d after a refused charge", used)
	}
}

func TestWaitThenGrantOrFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(100, 5*time.Second, "memoryBudgetMiB")
		var first Account
		if err := first.Charge(context.Background(), b, 80); err != nil {
			t.Fatal(err)
		}
		// A second query waits for the first to finish and then gets its bytes.
		got := make(chan error, 1)
		go func() {
			var a Account
			got <- a.Charge(context.Background(), b, 50)
		}()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("granted over budget: %v", err)
		default:
		}
		first.Release()
		if err := <-got; err != nil {
			t.Fatalf("after release: %v", err)
		}
		// Nobody releases: the wait ends with "too many large queries at once".
		var third Account
		err := third.Charge(context.Background(), b, 60)
		var be *Error
		if !errors.As(err, &be) || be.Waited != 5*time.Second || !strings.Contains(err.Error(), "too many large queries at once") {
			t.Fatalf("err %v, want a budget error after 5s", err)
		}
		// A query deadline that passes in line is the budget's doing too; cancellation is not.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := third.Charge(ctx, b, 60); !errors.As(err, &be) || be.Waited != time.Second {
			t.Errorf("deadline in line: err %v", err)
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		cancel2()
		if err := third.Charge(ctx2, b, 60); !errors.Is(err, context.Canceled) {
			t.Errorf("canceled: err %v", err)
		}
		if used, _, _ := b.Stats(); used != 50 {
			t.Errorf("used %d, want 50", used)
		}
	})
}

// TestNoDeadlockBetweenGrowingAnswers: two answers of unknown length each hold half the
// budget and want more; neither can finish, so the second to ask fails at once instead of
// both waiting out the timeout, and its release lets the first finish.
func TestNoDeadlockBetweenGrowingAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(100, time.Minute, "x")
		var a1, a2 Account
		if a1.Charge(context.Background(), b, 50) != nil || a2.Charge(context.Background(), b, 50) != nil {
			t.Fatal("initial charges refused")
		}
		first := make(chan error, 1)
		go func() { first <- a1.Charge(context.Background(), b, 30) }()
		synctest.Wait()
		start := time.Now()
		err := a2.Charge(context.Background(), b, 30)
		var be *Error
		if !errors.As(err, &be) || !be.Crowded || time.Since(start) != 0 {
			t.Fatalf("err %v after %s, want an immediate crowded error", err, time.Since(start))
		}
		a2.Release()
		if err := <-first; err != nil {
			t.Fatalf("the first answer could not grow after the second gave up: %v", err)
		}
		if used, _, _ := b.Stats(); used != 80 {
			t.Errorf("used %d, want 80", used)
		}
	})
}

// TestFirstInLineFirstServed: a large waiter is not overtaken by small ones that would fit.
func TestFirstInLineFirstServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(100, time.Minute, "x")
		var holder Account
		if err := holder.Charge(context.Background(), b, 60); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []string
		charge := func(name string, n int64, after time.Duration) {
			go func() {
				time.Sleep(after)
				var a Account
				if err := a.Charge(context.Background(), b, n); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(time.Second)
				a.Release()
			}()
		}
		charge("large", 95, 0)
		charge("small", 10, time.Millisecond)
		time.Sleep(time.Second)
		holder.Release()
		time.Sleep(10 * time.Second)
		if fmt.Sprint(order) != "[large small]" {
			t.Errorf("order %v, want the large one first", order)
		}
	})
}

// TestRandomLoadStaysWithinBudget: random concurrent charges (fixed seeds) never hold more
// than the limit, and everything is given back.
func TestRandomLoadStaysWithinBudget(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				b := New(1000, 3*time.Second, "x")
				var wg sync.WaitGroup
				var granted, refused atomic.Int32
				for range 200 {
					n, arrive, hold := int64(1+rng.IntN(1100)), time.Duration(rng.IntN(5000))*time.Millisecond, time.Duration(rng.IntN(800))*time.Millisecond
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(arrive)
						var a Account
						for range 3 { // a query reading its answer in pieces
							if err := a.Charge(context.Background(), b, n/3); err != nil {
								refused.Add(1)
								a.Release()
								return
							}
							time.Sleep(hold / 3)
						}
						granted.Add(1)
						a.Release()
					}()
				}
				wg.Wait()
				used, peak, limit := b.Stats()
				if peak > limit || used != 0 {
					t.Errorf("peak %d (limit %d), %d still used at the end", peak, limit, used)
				}
				if granted.Load() == 0 || peak < limit/2 {
					t.Errorf("granted %d, peak %d: the budget was not used", granted.Load(), peak)
				}
			})
		})
	}
}

type bodyServer struct {
	body          string
	contentLength bool
}

func (s bodyServer) RoundTrip(r *http.Request) (*http.Response, error) {
	cl := int64(-1)
	if s.contentLength {
		cl = int64(len(s.body))
	}
	return &http.Response{StatusCode: 200, ContentLength: cl, Body: io.NopCloser(strings.NewReader(s.body)), Request: r}, nil
}

func TestTransportCharges(t *testing.T) {
	body := strings.Repeat("x", 3*chunk+5)
	for _, tc := range []struct {
		name          string
		contentLength bool
		limit         int64
		wantErr       string
		wantPeak      int64
	}{
		{"stated length paid up front", true, 1 << 30, "", int64(len(body)) * 2},
		{"chunked paid as read", false, 1 << 30, "", 4 * chunk * 2},
		{"stated length over budget", true, int64(len(body)), "narrow the query", 0},
		{"chunked over budget mid-body", false, 5 * chunk, "narrow the query", 4 * chunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(tc.limit, time.Second, "x")
			rt := Transport(bodyServer{body: body, contentLength: tc.contentLength}, b, 2)
			ctx, acct := Scope(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/", nil)
			resp, err := rt.RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			used, peak, _ := b.Stats()
			if peak != tc.wantPeak {
				t.Errorf("peak %d, want %d", peak, tc.wantPeak)
			}
			if used != peak {
				t.Errorf("the scope's charge (%d of %d) was given back before the scope ended", used, peak)
			}
			acct.Release()
			if used, _, _ := b.Stats(); used != 0 {
				t.Errorf("%d still used after the scope ended", used)
			}
		})
	}
	t.Run("no scope: released on close", func(t *testing.T) {
		b := New(1<<30, time.Second, "x")
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		resp, err := Transport(bodyServer{body: body}, b, 1).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		if used, _, _ := b.Stats(); used == 0 {
			t.Error("nothing charged while reading")
		}
		resp.Body.Close()
		if used, _, _ := b.Stats(); used != 0 {
			t.Errorf("%d still used after close", used)
		}
	})
}
