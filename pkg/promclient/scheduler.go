package promclient

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Traffic shaping: per class (queries, discovery) a reserve and a shared pool of slots,
// each with an x/time/rate bucket; light requests use the reserve first, heavy ones only
// the shared pool, and a request that waits too long gets a *LimitError.

// cheapPoints is the most points a cheap request asks for (instant queries, short
// ranges): only cheap requests may use the reserve (see scheduler).
const cheapPoints = 60

// scheduler paces the requests of one traffic class (a region's queries or its discovery).
// Its slots and its rate are split in two pools: a reserve that only cheap requests use
// and a shared pool that heavy ones use too, cheap ones trying the reserve first. So heavy
// requests (long ranges) hold at most half of the slots and send at most half of any
// second's requests, and a stat panel's one-point query finds room beside them at once.
type scheduler struct {
	pools [2]pool // the reserve, then the shared pool
	// mu keeps the buckets' clock readings in order: a bucket given a reading older than
	// its last would credit the time in between twice.
	mu   sync.Mutex
	rps  float64 // as configured, for LimitError
	conc int
	// fallback marks the scheduler used while the account budget's store fails, for LimitError.
	fallback bool
}

type pool struct {
	slots  chan struct{} // one element per request in flight; capacity 0: no slots
	tokens *rate.Limiter // nil: no rate limit
}

// newScheduler paces rps requests per second (rps ≤ 0: no pacing) with conc in flight.
// A fractional rate is rounded down per second; below one per second, requests go at most
// one per 1/rps, so the setting is never exceeded.
func newScheduler(rps float64, conc int) *scheduler {
	conc = max(conc, 1)
	s := &scheduler{rps: rps, conc: conc}
	s.pools[0].slots = make(chan struct{}, conc/2)
	s.pools[1].slots = make(chan struct{}, conc-conc/2)
	switch {
	case rps <= 0 || math.IsInf(rps, 1):
	case rps < 2:
		// Nothing to split: both pools draw on one bucket.
		b := rate.NewLimiter(rate.Limit(min(rps, 1)), 1)
		s.pools[0].tokens, s.pools[1].tokens = b, b
	default:
		n := int(min(rps, math.MaxInt32))
		s.pools[0].tokens, s.pools[1].tokens = bucket(n/2), bucket(n-n/2)
	}
	return s
}

// bucket lets at most n ≥ 1 requests through in any one-second window. A bucket of b
// tokens refilled at r per second lets at most b+r-1 through in one (it holds at most b
// as the window opens and gains less than r before it closes), so b+r = n+1. Half of n is
// the burst, so a dashboard's first requests go together, and the rest the refill.
func bucket(n int) *rate.Limiter {
	b := max(1, n/2)
	return rate.NewLimiter(rate.Limit(n+1-b), b)
}

// LimitError is a request our own limiter did not send: waiting for its turn would pass
// the request's deadline. It unwraps to context.DeadlineExceeded.
type LimitError struct {
	RequestsPerSecond float64 // negative: no rate limit, concurrency was the bottleneck
	MaxConcurrency    int
	Waited            time.Duration
	// Shared is set when the AWS account's budget shared with the other replicas and data
	// sources (Options.Budget) held the request, not this client's own limiter.
	Shared Class
	// Fallback is set when the limits this client keeps to while the shared store is
	// unavailable (Options.FallbackRPS, FallbackConcurrency) held the request.
	Fallback bool
}

func (e *LimitError) Error() string {
	if e.Shared != "" {
		return fmt.Sprintf("the AWS account's %s budget, shared with the other Grafana replicas and data sources of the account through the shared store, held this request for %s and it would not be sent before the query's deadline: "+
			"raise jsonData.sharedStore.accountShare (the percentage of CloudWatch's per-account limits these data sources may use), show fewer panels at once, or raise the query timeout",
			e.Shared, e.Waited.Round(time.Millisecond))
	}
	rate := "no request rate limit"
	if e.RequestsPerSecond >= 0 {
		rate = fmt.Sprintf("requestsPerSecond %g", e.RequestsPerSecond)
	}
	if e.Fallback {
		return fmt.Sprintf("the shared store is unavailable, so this Grafana replica keeps to its fallback share of the AWS account's budget (%s, maxConcurrency %d), which held this request for %s and it would not be sent before the query's deadline: "+
			"bring the shared store back (its error is reported as \"shared cache unavailable\"), raise jsonData.sharedStore.fallbackShare, show fewer panels at once, or raise the query timeout",
			rate, e.MaxConcurrency, e.Waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("the datasource's own request limiter (%s, maxConcurrency %d) held this request for %s and it would not be sent before the query's deadline: "+
		"raise requestsPerSecond or maxConcurrency in the datasource settings (CloudWatch allows 300 requests per second and 30 concurrent queries per account), "+
		"show fewer panels at once, or raise the query timeout",
		rate, e.MaxConcurrency, e.Waited.Round(time.Millisecond))
}

func (e *LimitError) Unwrap() error { return context.DeadlineExceeded }

// acquire waits until a request of cost points (1 for an instant query) may be sent and
// returns the function that frees its slot. The slot comes first and the token with it in
// hand, so the token is taken the moment the request goes and the sends keep to the rate.
func (s *scheduler) acquire(ctx context.Context, cost int) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	arrived := time.Now()
	pools := s.pools[:]
	if cost > cheapPoints {
		pools = pools[1:]
	}
	slots, err := slot(ctx, pools)
	if err != nil {
		return nil, s.held(err, arrived)
	}
	release := func() { <-slots }
	if err := s.pace(ctx, pools, arrived); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// slot takes a slot of the first of pools that has one free, else of the first to free one.
func slot(ctx context.Context, pools []pool) (chan struct{}, error) {
	for _, p := range pools {
		select {
		case p.slots <- struct{}{}:
			return p.slots, nil
		default:
		}
	}
	first, last := pools[0].slots, pools[len(pools)-1].slots
	select {
	case first <- struct{}{}:
		return first, nil
	case last <- struct{}{}:
		return last, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pace takes a token of the first of pools that has one, waiting for the first to gain one
// when none has. A wait past ctx's deadline is refused at once.
func (s *scheduler) pace(ctx context.Context, pools []pool, arrived time.Time) error {
	if pools[0].tokens == nil {
		return nil
	}
	for {
		s.mu.Lock()
		now := time.Now()
		wait := time.Duration(math.MaxInt64)
		for _, p := range pools {
			if p.tokens.AllowN(now, 1) {
				s.mu.Unlock()
				return nil
			}
			wait = min(wait, untilToken(p.tokens, now))
		}
		s.mu.Unlock()
		if deadline, ok := ctx.Deadline(); ok && now.Add(wait).After(deadline) {
			return s.refusal(now.Sub(arrived))
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return s.held(err, arrived)
		}
	}
}

// untilToken is how long from now until l holds a whole token, rounded up.
func untilToken(l *rate.Limiter, now time.Time) time.Duration {
	need := 1 - l.TokensAt(now)
	return time.Duration(math.Ceil(need / float64(l.Limit()) * float64(time.Second)))
}

// held is the error of a request ctx ended while the limiter held it: a deadline is the
// limiter's doing (a LimitError), a cancellation is not.
func (s *scheduler) held(err error, arrived time.Time) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return s.refusal(time.Since(arrived))
	}
	return err
}

func (s *scheduler) refusal(waited time.Duration) *LimitError {
	return &LimitError{RequestsPerSecond: s.rps, MaxConcurrency: s.conc, Waited: waited, Fallback: s.fallback}
}

// requestCost is the number of points a request asks for: a range query's steps, 1 otherwise.
func requestCost(p url.Values) int {
	step, err := strconv.ParseFloat(p.Get("step"), 64)
	if err != nil || step <= 0 {
		return 1
	}
	start, err1 := strconv.ParseFloat(p.Get("start"), 64)
	end, err2 := strconv.ParseFloat(p.Get("end"), 64)
	if err1 != nil || err2 != nil || end < start {
		return 1
	}
	return int(min((end-start)/step, math.MaxInt32)) + 1
}
