package promclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// cloudWatch is an account's limits as CloudWatch enforces them (rig/emulator's gate): a
// token bucket of one second's calls answered 422 "Rate exceeded", and calls in flight
// beyond the limit answered 429 at once, without queueing.
type cloudWatch struct {
	latency time.Duration
	conc    int
	tps     float64

	mu       sync.Mutex
	inFlight int
	tokens   float64
	last     time.Time

	served, tooMany, rateExceeded atomic.Int64
}

func newCloudWatch(t *testing.T, conc int, tps float64, latency time.Duration) (*cloudWatch, *url.URL) {
	cw := &cloudWatch{latency: latency, conc: conc, tps: tps, tokens: tps, last: time.Now()}
	srv := httptest.NewServer(cw)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return cw, u
}

func (cw *cloudWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cw.mu.Lock()
	now := time.Now()
	cw.tokens = min(cw.tps, cw.tokens+now.Sub(cw.last).Seconds()*cw.tps)
	cw.last = now
	switch {
	case cw.tokens < 1:
		cw.mu.Unlock()
		cw.rateExceeded.Add(1)
		reject(w, http.StatusUnprocessableEntity, "execution", "Rate exceeded: the TPS limit of %g per account was reached", cw.tps)
		return
	case cw.inFlight >= cw.conc:
		cw.mu.Unlock()
		cw.tooMany.Add(1)
		reject(w, http.StatusTooManyRequests, "too_many_requests", "Too many concurrent requests: the concurrency limit of %d per account was reached", cw.conc)
		return
	}
	cw.tokens--
	cw.inFlight++
	cw.mu.Unlock()
	select {
	case <-time.After(cw.latency):
	case <-r.Context().Done():
	}
	// The call ends before its answer is written, so that a client that has read the
	// answer never finds its call still counted.
	cw.mu.Lock()
	cw.inFlight--
	cw.mu.Unlock()
	cw.served.Add(1)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
}

func reject(w http.ResponseWriter, status int, errType, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":"error","errorType":%q,"error":%q}`, errType, fmt.Sprintf(format, args...))
}

// counted counts what a real budget grants, by class.
type counted struct {
	promclient.AccountBudget
	mu      sync.Mutex
	granted map[promclient.Class]int
	err     error // the last take's
}

func (c *counted) Take(ctx context.Context, cl promclient.Class, cost int) (func(), time.Duration, error) {
	release, wait, err := c.AccountBudget.Take(ctx, cl, cost)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	if release != nil {
		if c.granted == nil {
			c.granted = map[promclient.Class]int{}
		}
		c.granted[cl]++
	}
	return release, wait, err
}

// lastErr is the last take's error: the store's failure while it lasts.
func (c *counted) lastErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *counted) grants(cl promclient.Class) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.granted[cl]
}

var testAccount = sharedstore.Identity{Account: "123456789012", Region: "us-east-1"}

// replica opens its own connection to the store and builds the account's budget on it,
// as each Grafana replica does.
func replica(t *testing.T, addr string, limits sharedstore.AccountLimits, share float64) *counted {
	t.Helper()
	// Not the 50 ms default: on a loaded 2-core CI machine an operation can miss it, and a
	// replica switching to its fallback limits mid-load overlaps the shared slots (as
	// docs/high-availability.md says), which these tests of the budget would count.
	return replicaTimed(t, addr, limits, share, 500*time.Millisecond)
}

// replicaTimed is replica with the store's per-operation deadline: the fault tests keep
// the default, as a store that stops answering is met in production.
func replicaTimed(t *testing.T, addr string, limits sharedstore.AccountLimits, share float64, timeout time.Duration) *counted {
	t.Helper()
	st, err := sharedstore.Open(sharedstore.Settings{Addresses: []string{addr}, KeyPrefix: "test:", Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	b, err := sharedstore.NewBudget(st, testAccount, limits, share)
	require.NoError(t, err)
	return &counted{AccountBudget: b}
}

// TestBudgetClassesAndRetries: every attempt, retries included, takes the budget of its
// class: queries the query budget, labels, label values and series the discovery budget.
func TestBudgetClassesAndRetries(t *testing.T) {
	srv := storetest.Start(t)
	b := replica(t, srv.Addr, sharedstore.AccountLimits{}, 0.8)
	var calls atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			reject(w, http.StatusServiceUnavailable, "unavailable", "try again")
			return
		}
		fmt.Fprint(w, `{"status":"success","data":[]}`)
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	c, err := promclient.New(promclient.Options{BaseURL: u, Budget: b, Retry: promclient.RetryPolicy{BaseDelay: time.Millisecond}})
	require.NoError(t, err)
	ctx := context.Background()
	now := time.Now()
	require.NoError(t, c.Query(ctx, "up", now, 0, nil))
	assert.Equal(t, 2, b.grants(promclient.ClassQuery), "the 503 and its retry")
	require.NoError(t, c.QueryRange(ctx, "up", now.Add(-time.Hour), now, time.Minute, 0, nil))
	assert.Equal(t, 3, b.grants(promclient.ClassQuery))
	require.NoError(t, c.Labels(ctx, nil, time.Time{}, time.Time{}, 0, nil))
	require.NoError(t, c.LabelValues(ctx, "job", nil, time.Time{}, time.Time{}, 0, nil))
	require.NoError(t, c.Series(ctx, []string{"up"}, time.Time{}, time.Time{}, 0, nil))
	assert.Equal(t, 3, b.grants(promclient.ClassDiscovery))
	assert.Equal(t, 3, b.grants(promclient.ClassQuery), "discovery spent none of the query budget")
	assert.NoError(t, b.lastErr())
}

// TestBudgetHeldPastDeadline: the account's slots are all held elsewhere: the request
// waits for one, and past its deadline fails naming the shared budget and its fixes, sent
// nowhere.
func TestBudgetHeldPastDeadline(t *testing.T) {
	srv := storetest.Start(t)
	limits := sharedstore.AccountLimits{QueryConcurrency: 1}
	other := replica(t, srv.Addr, limits, 1)
	held, _, err := other.Take(context.Background(), promclient.ClassQuery, 1)
	require.NoError(t, err)
	require.NotNil(t, held)
	cw, u := newCloudWatch(t, 30, 300, 0)
	c, err := promclient.New(promclient.Options{BaseURL: u, QueryTimeout: 300 * time.Millisecond, Budget: replica(t, srv.Addr, limits, 1)})
	require.NoError(t, err)
	err = c.Query(context.Background(), "up", time.Time{}, 0, nil)
	var le *promclient.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, promclient.ClassQuery, le.Shared)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	for _, want := range []string{"AWS account's query budget", "accountShare", "fewer panels", "query timeout"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Zero(t, cw.served.Load()+cw.tooMany.Load(), "nothing sent")

	held() // the slot is free: the next request goes
	require.NoError(t, c.Query(context.Background(), "up", time.Time{}, 0, nil))
}

// load runs perClient queries on each client, parallel at a time, and returns the calls
// that failed.
func load(clients []*promclient.Client, perClient, parallel int, stop <-chan struct{}) (failed []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range clients {
		next := make(chan struct{}, perClient)
		for range perClient {
			next <- struct{}{}
		}
		close(next)
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if perClient > 0 {
						if _, ok := <-next; !ok {
							return
						}
					}
					if err := c.Query(context.Background(), "up", time.Time{}, 0, nil); err != nil {
						mu.Lock()
						failed = append(failed, err)
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	return failed
}

// TestBudgetKeepsReplicasWithinTheAccount: four replicas, each within its own default
// limits (10 concurrent, 30 per second), together exceed the account's 30 concurrent
// queries; sharing one budget they never do.
func TestBudgetKeepsReplicasWithinTheAccount(t *testing.T) {
	srv := storetest.Start(t)
	run := func(shared bool) (rejected int64, failed []error) {
		cw, u := newCloudWatch(t, 30, 300, 200*time.Millisecond)
		var clients []*promclient.Client
		for range 4 {
			opts := promclient.Options{BaseURL: u, QueryTimeout: 30 * time.Second}
			if shared {
				opts.Budget = replica(t, srv.Addr, sharedstore.AccountLimits{}, sharedstore.DefaultAccountShare/100.0)
			}
			c, err := promclient.New(opts)
			require.NoError(t, err)
			clients = append(clients, c)
		}
		failed = load(clients, 30, promclient.DefaultMaxConcurrency, nil)
		assert.Equal(t, int64(4*30-len(failed)), cw.served.Load(), "shared %v", shared)
		t.Logf("shared budget %v: %d answered, %d 429 (concurrency), %d 422 (rate), %d failed",
			shared, cw.served.Load(), cw.tooMany.Load(), cw.rateExceeded.Load(), len(failed))
		return cw.tooMany.Load() + cw.rateExceeded.Load(), failed
	}
	rejected, failed := run(true)
	assert.Zero(t, rejected, "with the shared budget")
	assert.Empty(t, failed)
	// Without it, the rejected calls are retried, and a call rejected on every try fails.
	rejected, _ = run(false)
	assert.Positive(t, rejected, "without it, four replicas exceed the account's 30 concurrent queries")
}

// TestBudgetStoreFaults: the store stops or pauses (SIGSTOP) under load: the calls go on
// under the fallback limits, none fails, none is rejected upstream, the budget says why; and
// the budget is used again once the store is back.
func TestBudgetStoreFaults(t *testing.T) {
	for _, tc := range []struct {
		name          string
		fail, recover func(*storetest.Server)
	}{
		{"paused", (*storetest.Server).Pause, (*storetest.Server).Resume},
		{"stopped", (*storetest.Server).Stop, (*storetest.Server).Restart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := storetest.Start(t)
			cw, u := newCloudWatch(t, 30, 300, 50*time.Millisecond)
			share, fallbackShare := sharedstore.Settings{}.Shares()
			var budgets []*counted
			var clients []*promclient.Client
			for range 4 {
				b := replicaTimed(t, srv.Addr, sharedstore.AccountLimits{}, share, sharedstore.DefaultTimeout)
				opts := promclient.Options{BaseURL: u, QueryTimeout: 5 * time.Second, Budget: b}
				sharedstore.FallbackOf(sharedstore.AccountLimits{}, share, fallbackShare).Apply(&opts)
				c, err := promclient.New(opts)
				require.NoError(t, err)
				budgets, clients = append(budgets, b), append(clients, c)
			}
			grants := func() (n int) {
				for _, b := range budgets {
					n += b.grants(promclient.ClassQuery)
				}
				return n
			}
			stop := make(chan struct{})
			done := make(chan []error)
			go func() { done <- load(clients, 0, promclient.DefaultMaxConcurrency, stop) }()
			waitFor := func(what string, within time.Duration, ok func() bool) {
				t.Helper()
				for deadline := time.Now().Add(within); !ok(); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						close(stop)
						<-done
						t.Fatalf("%s: not within %s", what, within)
					}
				}
			}
			storeErrs := func() (n int) {
				for _, b := range budgets {
					if b.lastErr() != nil {
						n++
					}
				}
				return n
			}
			// Past the first panels' burst, as a store fails in the middle of a day: calls that
			// the budget let through and the fallback limits' own overlap only until they end.
			waitFor("the budget in use", 10*time.Second, func() bool { return grants() > 150 })

			tc.fail(srv)
			waitFor("every replica reports the store", 10*time.Second, func() bool { return storeErrs() == 4 })
			err := budgets[0].lastErr()
			assert.True(t, sharedstore.IsUnavailable(err), "%v", err)
			assert.Contains(t, err.Error(), "shared cache unavailable: ")
			servedAtFault, grantsAtFault := cw.served.Load(), grants()
			waitFor("calls answered under the fallback limits", 10*time.Second, func() bool { return cw.served.Load() > servedAtFault+50 })
			assert.Equal(t, grantsAtFault, grants(), "no grant from a store that is down")

			tc.recover(srv)
			// The store's gate backs off at most 30 s between probes.
			waitFor("the budget used again", 40*time.Second, func() bool { return grants() > grantsAtFault+20 && storeErrs() == 0 })
			close(stop)
			failed := <-done
			for _, err := range failed {
				t.Errorf("a call failed: %v", err)
			}
			assert.Zero(t, cw.tooMany.Load()+cw.rateExceeded.Load(), "rejected upstream")
			t.Logf("%s: %d answered (%d since the store failed), %d failed, %d rejected", tc.name, cw.served.Load(),
				cw.served.Load()-servedAtFault, len(failed), cw.tooMany.Load()+cw.rateExceeded.Load())
		})
	}
}

// TestBudgetFallbackLimits: with the store down, the fallback limits pace the client, and
// a request they hold past its deadline names them and the store, not the client's own.
func TestBudgetFallbackLimits(t *testing.T) {
	srv := storetest.Start(t)
	b := replica(t, srv.Addr, sharedstore.AccountLimits{}, 0.8)
	srv.Stop()
	cw, u := newCloudWatch(t, 30, 300, 0)
	c, err := promclient.New(promclient.Options{BaseURL: u, QueryTimeout: 300 * time.Millisecond, Budget: b,
		FallbackRPS: 0.001, FallbackDiscoveryRPS: 1000, FallbackConcurrency: 1})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Query(ctx, "up", time.Time{}, 0, nil), "the fallback's first call")
	assert.True(t, sharedstore.IsUnavailable(b.lastErr()), "%v", b.lastErr())
	err = c.Query(ctx, "up", time.Time{}, 0, nil)
	var le *promclient.LimitError
	require.ErrorAs(t, err, &le)
	assert.True(t, le.Fallback)
	assert.Contains(t, err.Error(), "fallbackShare")
	assert.Contains(t, err.Error(), "requestsPerSecond 0.001")
	require.NoError(t, c.Labels(ctx, nil, time.Time{}, time.Time{}, 0, nil), "discovery has a fallback rate of its own")
	assert.Equal(t, int64(2), cw.served.Load())
}
