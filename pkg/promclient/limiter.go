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
//   - reserve: requests are in three lanes (see lane). Heavy ones hold at most half of
//     the slots and take at most half of the admissions in any window; heavy ones and
//     followers together hold at most three quarters of each. So a stat panel's one
//     query finds a slot and room in the rate beside range queries and beside the columns
//     of tables, without either total ever passing its limit;
//   - order: of the waiters that may take a slot, the one that may be sent soonest goes
//     first (a lighter lane while a heavier one waits for its share of the rate, and no
//     request before its settling delay), and among those the one with the earliest key:
//     its arrival plus penalties for its cost, its place in its flow and its flow's size,
//     so one-point stat panels overtake range queries, tables and other panels' later
//     queries that arrived shortly before them, and nothing waits forever.
type scheduler struct {
	mu         sync.Mutex
	n          int           // admissions per window; 0 = no rate limit
	window     time.Duration // 1s, or longer for rates below one per second
	sends      ring          // the last n admission times
	bulkSends  ring          // the last admission times of followers and heavy requests
	heavySends ring          // the last admission times of heavy requests
	conc       int
	bulkConc   int // conc less the slots reserved for leads
	heavyConc  int // conc less the slots reserved for cheap requests
	inFlight   int
	bulkIn     int // followers and heavy requests in flight
	heavyIn    int
	queues     [lanes]waitQueue
	seq        uint64
	rps        float64 // as configured, for messages
	now        func() time.Time
}

// lane is where a request waits and what it counts in. A flow is one query request of a
// panel (see WithFlow): its first cheap request paints the panel when it is alone, as a
// stat panel's is.
type lane uint8

const (
	lead     lane = iota // at most cheapPoints points, its flow's first cheap request (or no flow)
	follower             // at most cheapPoints points, a later request of its flow
	heavy                // more than cheapPoints points
	lanes
)

func laneOf(cost, depth int) lane {
	switch {
	case cost > cheapPoints:
		return heavy
	case depth > 0:
		return follower
	}
	return lead
}

// maxCostPenalty is how far the heaviest request's place in line is pushed back; with it a
// request of heavyPoints or more points lets cheaper ones that arrive up to this much later go first.
// Requests of at most cheapPoints points (instant queries, short ranges) are cheap: they
// may use the slots reserved for them. Each earlier request of its flow pushes a request
// back by depthStep, up to maxDepthPenalty, so the first queries of all panels go before the
// second ones; each further query of its flow by sizeStep, up to maxSizePenalty, so
// smaller panels go first. maxSettle bounds the settling delay (see settleDelay).
const (
	maxCostPenalty  = 2 * time.Second
	heavyPoints     = 1000
	cheapPoints     = 60
	depthStep       = 25 * time.Millisecond
	maxDepthPenalty = 400 * time.Millisecond
	sizeStep        = 10 * time.Millisecond
	maxSizePenalty  = 200 * time.Millisecond
	maxSettle       = 40 * time.Millisecond
)

// reservedSlots is how many of conc slots, and of n admissions per window, heavy requests
// leave to cheap ones: half, so the one-point queries of a dashboard's stat panels rarely
// wait for each other; none when there is one.
func reservedSlots(conc int) int { return conc / 2 }

// leadSlots is how many of conc slots, and of n admissions per window, followers and heavy
// requests together leave to leads: a quarter, so a table's many columns and a diagnosis'
// fan-out cannot take the slots a one-query panel needs.
func leadSlots(conc int) int { return conc / 4 }

// newScheduler paces rps requests per second (rps < 0: no pacing) with conc in flight.
// A fractional rate is rounded down per second; below one per second the window stretches
// to 1/rps, so the setting is never exceeded.
func newScheduler(rps float64, conc int, now func() time.Time) *scheduler {
	conc = max(conc, 1)
	s := &scheduler{conc: conc, bulkConc: conc - leadSlots(conc), heavyConc: conc - reservedSlots(conc), rps: rps, now: now, window: time.Second}
	switch {
	case rps < 0 || math.IsInf(rps, 1):
	case rps < 1:
		s.n, s.window = 1, time.Duration(float64(time.Second)/rps)
	default:
		s.n = int(math.Floor(rps))
	}
	if s.n > 0 {
		s.sends = newRing(s.n)
		s.bulkSends = newRing(s.n - leadSlots(s.n))
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
	key     time.Time
	settled time.Time // not admitted before (see settleDelay)
	seq     uint64
	lane    lane
	wake    chan struct{}
	index   int
}

// acquire waits until the request may be sent and returns the function that ends its
// in-flight time. cost is the request's size in points (1 for an instant query); at is its
// place in its flow (see flowPlace).
func (s *scheduler) acquire(ctx context.Context, cost int, at place) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	arrived := s.now()
	s.seq++
	ln := laneOf(cost, at.depth)
	w := &waiter{key: arrived.Add(costPenalty(cost) + depthPenalty(at.depth) + sizePenalty(at.size)), settled: arrived.Add(settleDelay(ln, at.size)),
		seq: s.seq, lane: ln, wake: make(chan struct{}, 1)}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline && w.settled.After(deadline) {
		// Settling is the limiter's own choice, not a limit: a request it would outlast goes
		// as soon as the rules let it, rather than being refused in the settings' name.
		w.settled = arrived
	}
	heap.Push(s.queueOf(w), w)
	for {
		now := s.now()
		var timer *time.Timer
		// Each waiter has its own settling time, so an arrival, or time passing, can make
		// another waiter next while it sleeps without a timer: whoever looks and is not
		// next wakes the one that is, which looks again.
		switch nx := s.next(); nx {
		case nil:
		case w:
			at := later(s.nextAdmission(w.lane), w.settled)
			if !at.After(now) {
				heap.Remove(s.queueOf(w), w.index)
				s.admit(now, w.lane)
				s.wakeNext()
				s.mu.Unlock()
				return func() { s.release(w.lane) }, nil
			}
			if hasDeadline && at.After(deadline) {
				heap.Remove(s.queueOf(w), w.index)
				s.wakeNext()
				s.mu.Unlock()
				return nil, s.refusal(now.Sub(arrived))
			}
			timer = time.NewTimer(at.Sub(now))
		default:
			nx.signal()
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

func (s *scheduler) queueOf(w *waiter) *waitQueue { return &s.queues[w.lane] }

// next is the waiter to admit next: of each lane's candidate (see laneNext) where the lane
// has a slot free, the one the rate and its settling delay let through soonest (a lighter
// lane while a heavier one has used its share of the window), else the earliest key. Nil
// when no lane with a free slot has a waiter.
func (s *scheduler) next() *waiter {
	var (
		best   *waiter
		bestAt time.Time
	)
	now := s.now()
	for c := range lanes {
		if len(s.queues[c]) == 0 || !s.slotFree(c) {
			continue
		}
		w, at := s.laneNext(c, later(now, s.nextAdmission(c)))
		if best == nil || at.Before(bestAt) || (at.Equal(bestAt) && w.before(best)) {
			best, bestAt = w, at
		}
	}
	return best
}

// laneNext is lane c's candidate when the rate lets the lane through at ready: the first
// by key of its waiters settled by then, else the one that settles first. A head still
// settling does not hold back a lane-mate that has settled.
func (s *scheduler) laneNext(c lane, ready time.Time) (*waiter, time.Time) {
	q := s.queues[c]
	if !q[0].settled.After(ready) {
		return q[0], ready // the first by key, and settled: no one in the lane goes sooner
	}
	var (
		best   *waiter
		bestAt time.Time
	)
	for _, w := range q {
		at := later(ready, w.settled)
		if best == nil || at.Before(bestAt) || (at.Equal(bestAt) && w.before(best)) {
			best, bestAt = w, at
		}
	}
	return best, bestAt
}

// slotFree says whether a request of lane c may take a slot now.
func (s *scheduler) slotFree(c lane) bool {
	switch {
	case s.inFlight >= s.conc:
		return false
	case c == lead:
		return true
	case s.bulkIn >= s.bulkConc:
		return false
	}
	return c != heavy || s.heavyIn < s.heavyConc
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

// nextAdmission is the earliest time the rate rules allow another admission of lane c:
// once a ring that counts it is full, one window after that ring's oldest entry. A
// heavier lane is never admissible before a lighter one: its rules add to theirs.
func (s *scheduler) nextAdmission(c lane) time.Time {
	if s.n == 0 {
		return time.Time{}
	}
	at := s.sends.freeAt(s.window)
	if c != lead {
		at = later(at, s.bulkSends.freeAt(s.window))
	}
	if c == heavy {
		at = later(at, s.heavySends.freeAt(s.window))
	}
	return at
}

func (s *scheduler) admit(now time.Time, c lane) {
	s.count(c, 1)
	if s.n == 0 {
		return
	}
	s.sends.add(now)
	if c != lead {
		s.bulkSends.add(now)
	}
	if c == heavy {
		s.heavySends.add(now)
	}
}

// count adds d to the in-flight counts that lane c's requests count in.
func (s *scheduler) count(c lane, d int) {
	s.inFlight += d
	if c != lead {
		s.bulkIn += d
	}
	if c == heavy {
		s.heavyIn += d
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

func (s *scheduler) release(c lane) {
	s.mu.Lock()
	s.count(c, -1)
	s.wakeNext()
	s.mu.Unlock()
}

// wakeNext tells the waiter next in line to look again; only it can be admitted next.
func (s *scheduler) wakeNext() {
	if w := s.next(); w != nil {
		w.signal()
	}
}

// signal tells w to look again; a signal already pending is enough.
func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func costPenalty(points int) time.Duration {
	return time.Duration(min(max(points, 1), heavyPoints)) * maxCostPenalty / heavyPoints
}

func depthPenalty(depth int) time.Duration {
	return min(time.Duration(max(depth, 0))*depthStep, maxDepthPenalty)
}

// sizePenalty puts the requests of a query request with more queries (a table's columns)
// behind those of one with fewer (a stat panel's one), shortest panel first.
func sizePenalty(size int) time.Duration {
	return min(time.Duration(max(size-1, 0))*sizeStep, maxSizePenalty)
}

// settleDelay is how long a request waits before it may be admitted even when a slot and
// the rate are free: none for a one-query panel's request (or one without a flow), up to
// maxSettle for the others. A dashboard's panels arrive within a few milliseconds of each
// other; without it the first arrivals, range queries and table columns among them, take
// the free slots before the stat panels' requests reach the scheduler, and the order
// above never applies.
func settleDelay(ln lane, size int) time.Duration {
	if ln != lead {
		return maxSettle
	}
	return min(sizePenalty(size), maxSettle)
}

// flow counts the upstream requests of one query request (one panel's targets, one alert
// rule's queries) per scheduler (a region's query or discovery traffic), so each
// scheduler can tell the flow's first cheap (or heavy) request from its later ones.
type flow struct {
	size int // queries in the request
	mu   sync.Mutex
	sent map[flowSlot]int
}

// flowSlot is what a flow counts apart: its cheap and its heavy requests to each scheduler.
type flowSlot struct {
	s     *scheduler
	heavy bool
}

// place is where a request stands in its flow: how many of the flow's requests came to
// the same scheduler before it, and how many queries the flow's request holds (0: no flow).
type place struct{ depth, size int }

type flowKey struct{}

// WithFlow makes ctx one flow of a request of size queries: requests sent with it, or
// with contexts made from it, are counted together; all but the first cheap one wait
// behind other flows' first ones (see lane), and a flow of more queries behind one of
// fewer. Call it once per query request, before its queries run in parallel.
func WithFlow(ctx context.Context, size int) context.Context {
	return context.WithValue(ctx, flowKey{}, &flow{size: size, sent: map[flowSlot]int{}})
}

// flowPlace counts a request to s into ctx's flow and gives its place; without a flow
// (resource calls, health checks) the request is a lead of no panel.
func flowPlace(ctx context.Context, s *scheduler, cost int) place {
	f, _ := ctx.Value(flowKey{}).(*flow)
	if f == nil {
		return place{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := flowSlot{s, cost > cheapPoints}
	d := f.sent[k]
	f.sent[k] = d + 1
	return place{depth: d, size: f.size}
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
