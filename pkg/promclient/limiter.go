package promclient

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// scheduler admits the requests of one traffic class. Four rules:
//   - rate: at most n admissions in any window (a sliding window over the last n
//     admission times), so no one-second span ever exceeds the configured rate, not even
//     after an idle moment (a token bucket would let a full burst plus a second's refill through);
//   - concurrency: at most conc admitted and not yet released;
//   - reserve: heavy requests (more than cheapPoints points) hold at most conc - reserved
//     of the slots and take at most n - reserved of the admissions in any window, so a
//     stat panel's one-point query finds both a slot and room in the rate while range
//     queries use the rest, without either total ever passing its limit;
//   - order: of the waiters that may take a slot, the one that may be sent soonest goes
//     first (a cheap one while heavy ones wait for their share of the rate), and among
//     those the one with the earliest key, where the key is its arrival plus a penalty
//     that grows with its cost, so one-point stat panels overtake heavy range queries that
//     arrived shortly before them, and nothing waits forever.
type scheduler struct {
	mu            sync.Mutex
	n             int           // admissions per window; 0 = no rate limit
	window        time.Duration // 1s, or longer for rates below one per second
	sends         ring          // the last n admission times
	heavySends    ring          // the last heavyN heavy admission times
	conc          int
	heavyConc     int // conc less the slots reserved for cheap requests
	inFlight      int
	heavyInFlight int
	cheap, heavy  waitQueue
	seq           uint64
	rps           float64 // as configured, for messages
	now           func() time.Time
}

// maxCostPenalty is how far the heaviest request's place in line is pushed back; with it a
// request of heavyPoints or more points lets cheaper ones that arrive up to this much later go first.
// Requests of at most cheapPoints points (instant queries, short ranges) are cheap: they
// may use the slots reserved for them.
const (
	maxCostPenalty = 2 * time.Second
	heavyPoints    = 1000
	cheapPoints    = 60
)

// reservedSlots is how many of conc slots, and of n admissions per window, heavy requests
// leave to cheap ones: half, so the one-point queries of a dashboard's stat panels rarely
// wait for each other; none when there is one.
func reservedSlots(conc int) int { return conc / 2 }

// newScheduler paces rps requests per second (rps < 0: no pacing) with conc in flight.
// A fractional rate is rounded down per second; below one per second the window stretches
// to 1/rps, so the setting is never exceeded.
func newScheduler(rps float64, conc int, now func() time.Time) *scheduler {
	conc = max(conc, 1)
	s := &scheduler{conc: conc, heavyConc: conc - reservedSlots(conc), rps: rps, now: now, window: time.Second}
	switch {
	case rps < 0 || math.IsInf(rps, 1):
	case rps < 1:
		s.n, s.window = 1, time.Duration(float64(time.Second)/rps)
	default:
		s.n = int(math.Floor(rps))
	}
	if s.n > 0 {
		s.sends = newRing(s.n)
		s.heavySends = newRing(s.n - reservedSlots(s.n))
	}
	return s
}

// LimitError is a request our own limiter did not send: waiting for its turn would pass
// the request's deadline. It unwraps to context.DeadlineExceeded.
type LimitError struct {
	RequestsPerSecond float64 // negative: no rate limit, concurrency was the bottleneck
	MaxConcurrency    int
	Waited            time.Duration
}

func (e *LimitError) Error() string {
	rate := "no request rate limit"
	if e.RequestsPerSecond >= 0 {
		rate = fmt.Sprintf("requestsPerSecond %g", e.RequestsPerSecond)
	}
	return fmt.Sprintf("the datasource's own request limiter (%s, maxConcurrency %d) held this request for %s and it would not be sent before the query's deadline: "+
		"raise requestsPerSecond or maxConcurrency in the datasource settings (CloudWatch allows 300 requests per second and 30 concurrent queries per account), "+
		"show fewer panels at once, or raise the query timeout",
		rate, e.MaxConcurrency, e.Waited.Round(time.Millisecond))
}

func (e *LimitError) Unwrap() error { return context.DeadlineExceeded }

// LocalRefusal is an error from a limit of this process (such as a memory budget
// charging the body as it is read), not from the connection or the answer: a body read
// that fails with one is returned as it is, not retried as a cut-off answer.
type LocalRefusal interface {
	error
	LocalRefusal()
}

type waiter struct {
	key   time.Time
	seq   uint64
	heavy bool
	wake  chan struct{}
	index int
}

// acquire waits until the request may be sent and returns the function that ends its
// in-flight time. cost is the request's size in points (1 for an instant query).
func (s *scheduler) acquire(ctx context.Context, cost int) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	arrived := s.now()
	s.seq++
	w := &waiter{key: arrived.Add(costPenalty(cost)), seq: s.seq, heavy: cost > cheapPoints, wake: make(chan struct{}, 1)}
	heap.Push(s.queueOf(w), w)
	deadline, hasDeadline := ctx.Deadline()
	for {
		now := s.now()
		var timer *time.Timer
		if s.next() == w {
			at := s.nextAdmission(w.heavy)
			if !at.After(now) {
				heap.Pop(s.queueOf(w))
				s.admit(now, w.heavy)
				s.wakeNext()
				s.mu.Unlock()
				return func() { s.release(w.heavy) }, nil
			}
			if hasDeadline && at.After(deadline) {
				heap.Pop(s.queueOf(w))
				s.wakeNext()
				s.mu.Unlock()
				return nil, s.refusal(now.Sub(arrived))
			}
			timer = time.NewTimer(at.Sub(now))
		}
		s.mu.Unlock()
		var fired <-chan time.Time
		if timer != nil {
			fired = timer.C
		}
		select {
		case <-w.wake:
		case <-fired:
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			s.mu.Lock()
			heap.Remove(s.queueOf(w), w.index)
			s.wakeNext()
			waited := s.now().Sub(arrived)
			s.mu.Unlock()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, s.refusal(waited)
			}
			return nil, ctx.Err()
		}
		if timer != nil {
			timer.Stop()
		}
		s.mu.Lock()
	}
}

func (s *scheduler) queueOf(w *waiter) *waitQueue {
	if w.heavy {
		return &s.heavy
	}
	return &s.cheap
}

// next is the waiter to admit next: of the first cheap waiter and, while heavy requests
// have a slot left, the first heavy one, the one the rate lets through sooner (a cheap one
// while heavy ones have used their share of the window), else the earliest key. Nil when
// no slot is free for either.
func (s *scheduler) next() *waiter {
	if s.inFlight >= s.conc {
		return nil
	}
	var cheap, heavy *waiter
	if len(s.cheap) > 0 {
		cheap = s.cheap[0]
	}
	if len(s.heavy) > 0 && s.heavyInFlight < s.heavyConc {
		heavy = s.heavy[0]
	}
	switch {
	case heavy == nil:
		return cheap
	case cheap == nil:
		return heavy
	}
	// A heavy request is never admissible before a cheap one: its rule adds to theirs.
	now := s.now()
	if s.nextAdmission(true).After(later(now, s.nextAdmission(false))) || cheap.before(heavy) {
		return cheap
	}
	return heavy
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (s *scheduler) refusal(waited time.Duration) *LimitError {
	return &LimitError{RequestsPerSecond: s.rps, MaxConcurrency: s.conc, Waited: waited}
}

// nextAdmission is the earliest time the rate rules allow another admission of a cheap
// or heavy request: once a ring is full, one window after its oldest entry.
func (s *scheduler) nextAdmission(heavy bool) time.Time {
	if s.n == 0 {
		return time.Time{}
	}
	at := s.sends.freeAt(s.window)
	if heavy {
		at = later(at, s.heavySends.freeAt(s.window))
	}
	return at
}

func (s *scheduler) admit(now time.Time, heavy bool) {
	s.inFlight++
	if heavy {
		s.heavyInFlight++
	}
	if s.n == 0 {
		return
	}
	s.sends.add(now)
	if heavy {
		s.heavySends.add(now)
	}
}

// ring keeps the last cap(times) admission times.
type ring struct {
	times []time.Time
	head  int // index of the oldest entry once full
}

func newRing(n int) ring { return ring{times: make([]time.Time, 0, max(n, 1))} }

// freeAt is when the ring allows another admission: at once while it is not full, else
// one window after its oldest entry.
func (r *ring) freeAt(window time.Duration) time.Time {
	if len(r.times) < cap(r.times) {
		return time.Time{}
	}
	return r.times[r.head].Add(window)
}

func (r *ring) add(t time.Time) {
	if len(r.times) < cap(r.times) {
		r.times = append(r.times, t)
		return
	}
	r.times[r.head] = t
	r.head = (r.head + 1) % len(r.times)
}

func (s *scheduler) release(heavy bool) {
	s.mu.Lock()
	s.inFlight--
	if heavy {
		s.heavyInFlight--
	}
	s.wakeNext()
	s.mu.Unlock()
}

// wakeNext tells the waiter next in line to look again; only it can be admitted next.
func (s *scheduler) wakeNext() {
	if w := s.next(); w != nil {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func costPenalty(points int) time.Duration {
	return time.Duration(min(max(points, 1), heavyPoints)) * maxCostPenalty / heavyPoints
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

// waitQueue is a min-heap of waiters by (key, arrival order).
type waitQueue []*waiter

func (q waitQueue) Len() int           { return len(q) }
func (q waitQueue) Less(i, j int) bool { return q[i].before(q[j]) }

// before orders waiters by key, then by arrival.
func (w *waiter) before(o *waiter) bool {
	if !w.key.Equal(o.key) {
		return w.key.Before(o.key)
	}
	return w.seq < o.seq
}
func (q waitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *waitQueue) Push(x any) {
	w := x.(*waiter)
	w.index = len(*q)
	*q = append(*q, w)
}
func (q *waitQueue) Pop() any {
	old := *q
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return w
}
