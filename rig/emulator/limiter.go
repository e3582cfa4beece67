package emulator

import (
	"math"
	"sync"
	"time"
)

// tokenBucket admits rate requests per second with a burst of the same size; the
// clock is injected so tests can throttle without sleeping.
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

// newTokenBucket returns nil (never throttles) for a rate ≤ 0.
func newTokenBucket(rate float64, now func() time.Time) *tokenBucket {
	if rate <= 0 {
		return nil
	}
	burst := math.Max(1, math.Ceil(rate))
	return &tokenBucket{rate: rate, burst: burst, tokens: burst, last: now(), now: now}
}

func (b *tokenBucket) allow() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(b.burst, b.tokens+elapsed*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// slots bounds requests in flight without queueing: CloudWatch rejects, it does not wait.
type slots chan struct{}

// newSlots returns nil (unbounded) for n ≤ 0.
func newSlots(n int) slots {
	if n <= 0 {
		return nil
	}
	return make(slots, n)
}

// acquire reports whether a slot was free; the caller must release a slot it got.
func (s slots) acquire() bool {
	if s == nil {
		return true
	}
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s slots) release() {
	if s != nil {
		<-s
	}
}
