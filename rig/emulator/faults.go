package emulator

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// faultInjector applies Faults. Random draws come from one seeded source in request
// order, so a test that sends the same requests sees the same faults.
type faultInjector struct {
	cfg      Faults
	tps      *tokenBucket
	inFlight slots

	mu  sync.Mutex
	rng *rand.Rand
}

func newFaultInjector(cfg Faults, now func() time.Time) *faultInjector {
	seed := uint64(cfg.Seed) // #nosec G115 -- the seed's bits, reinterpreted
	return &faultInjector{
		cfg:      cfg,
		tps:      newTokenBucket(cfg.TPS, now),
		inFlight: newSlots(cfg.Concurrency),
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), // #nosec G404 -- reproducible fault injection from a seed, not a secret
	}
}

// hit draws once and reports whether a fault of the given rate fires.
func (f *faultInjector) hit(rate float64) bool {
	if rate <= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64() < rate
}

// before applies the request-level faults. On success the caller must call release.
func (f *faultInjector) before(ctx context.Context) (release func(), aerr *apiError) {
	if f.cfg.Latency > 0 {
		t := time.NewTimer(f.cfg.Latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, newAPIError(499, errCanceled, "request canceled during injected latency")
		}
	}
	if !f.tps.allow() {
		return nil, newAPIError(http.StatusUnprocessableEntity, errExecution, "Rate exceeded: injected fault allows %g requests per second", f.cfg.TPS)
	}
	if !f.inFlight.acquire() {
		return nil, newAPIError(http.StatusTooManyRequests, errThrottled, "Too many concurrent requests: injected fault allows %d in flight", f.cfg.Concurrency)
	}
	if f.hit(f.cfg.ErrorRate) {
		f.inFlight.release()
		return nil, newAPIError(http.StatusServiceUnavailable, errUnavailable, "injected fault: service unavailable, retry later")
	}
	return f.inFlight.release, nil
}

// mangle applies the body faults. It returns the bytes to send and the Content-Length
// to declare, which is longer than the bytes for a truncated body.
func (f *faultInjector) mangle(status int, body []byte) ([]byte, int) {
	if f.hit(f.cfg.TruncateRate) {
		return body[:len(body)/2], len(body)
	}
	if status == http.StatusOK && f.hit(f.cfg.MalformedRate) {
		bad := append(body[:len(body)/2:len(body)/2], "<!-- injected fault -->"...)
		return bad, len(bad)
	}
	return body, len(body)
}
