// Package budget bounds the memory that concurrent queries spend on upstream answers. A
// Budget is a pool of bytes; each query draws from it through an Account carried in its
// context while its answer is read and decoded, and gives everything back when done. Over
// budget, a query waits briefly in line for others to finish, then fails with an error
// that says to narrow the query or load fewer large panels at once.
package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults: the largest answer promclient accepts (256 MiB) times DefaultFactor fits.
const (
	DefaultLimitMiB = 1024
	// DefaultFactor is how many bytes of memory one byte of JSON answer is charged while
	// it is read and turned into frames. The body streams into the converter, but the
	// frames, the parse state and their copies for Grafana (encoded after the charge is
	// given back) add up: over gRPC, three 4.8 MB answers at once grew the plugin's RSS by
	// 90 MiB. Four times the body keeps the budget near what the process really holds.
	DefaultFactor = 4
	// DefaultMaxWait is how long a query waits for room before it fails.
	DefaultMaxWait = 10 * time.Second
)

// Budget is a bounded pool of bytes shared by concurrent queries. Waiters are served in
// arrival order, so a large answer is not starved by a stream of small ones.
type Budget struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	peak    int64
	maxWait time.Duration
	queue   []*waiter
	stuck   int64  // bytes held by accounts that are themselves waiting for more
	setting string // the setting that sizes the budget, for messages
}

type waiter struct {
	n, held int64
	ready   chan struct{}
}

// New builds a budget of limit bytes. maxWait ≤ 0 means DefaultMaxWait; setting names the
// configuration key users raise (it appears in errors).
func New(limit int64, maxWait time.Duration, setting string) *Budget {
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	return &Budget{limit: limit, maxWait: maxWait, setting: setting}
}

// Error is a charge the budget could not grant.
type Error struct {
	Need, Limit int64
	// Crowded: other queries held the budget (for Waited); else this answer alone exceeds it.
	Crowded bool
	Waited  time.Duration
	Setting string
}

func (e *Error) Error() string {
	if !e.Crowded {
		return fmt.Sprintf("this query's answer needs about %s of memory to decode, more than the datasource's whole memory budget (%s = %s): "+
			"narrow the query (fewer series, a shorter time range or a larger min step)", mib(e.Need), e.Setting, mib(e.Limit))
	}
	return fmt.Sprintf("too many large queries at once: the datasource's memory budget (%s = %s) stayed full for %s while this answer needed %s more; "+
		"narrow the queries, show fewer large panels at once, or raise %s", e.Setting, mib(e.Limit), e.Waited.Round(time.Millisecond), mib(e.Need), e.Setting)
}

// LocalRefusal marks the error as this process's own limit (promclient.LocalRefusal), so
// a body read it stops is not retried as a broken connection.
func (e *Error) LocalRefusal() {}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// acquire takes n bytes, waiting in line for up to maxWait (or until ctx ends). held is
// what the caller already holds here: while it waits, those bytes cannot be given back. If
// every byte in use is held by waiters, nobody will release anything (answers of unknown
// length each grew part way), so a caller that holds bytes fails at once instead of waiting
// out maxWait; one that holds nothing waits, as the failure frees room.
func (b *Budget) acquire(ctx context.Context, n, held int64) error {
	if n <= 0 {
		return nil
	}
	b.mu.Lock()
	if n > b.limit {
		b.mu.Unlock()
		return &Error{Need: n, Limit: b.limit, Setting: b.setting}
	}
	if len(b.queue) == 0 && b.used+n <= b.limit {
		b.take(n)
		b.mu.Unlock()
		return nil
	}
	if held > 0 && b.used-b.stuck-held <= 0 {
		b.mu.Unlock()
		return &Error{Need: n, Limit: b.limit, Crowded: true, Setting: b.setting}
	}
	w := &waiter{n: n, held: held, ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.stuck += held
	b.mu.Unlock()

	start := time.Now()
	timer := time.NewTimer(b.maxWait)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return nil
	case <-timer.C:
		err = &Error{Need: n, Limit: b.limit, Crowded: true, Waited: time.Since(start), Setting: b.setting}
	case <-ctx.Done():
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			// The deadline passed in our line, not upstream: say which limit held it.
			err = &Error{Need: n, Limit: b.limit, Crowded: true, Waited: time.Since(start), Setting: b.setting}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted while giving up: keep it, the caller releases as usual
		return nil
	default:
	}
	b.stuck -= held
	for i, q := range b.queue {
		if q == w {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	b.grant()
	return err
}

func (b *Budget) take(n int64) {
	b.used += n
	b.peak = max(b.peak, b.used)
}

func (b *Budget) release(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grant()
	b.mu.Unlock()
}

// grant admits waiters from the front of the line while they fit.
func (b *Budget) grant() {
	for len(b.queue) > 0 && b.used+b.queue[0].n <= b.limit {
		w := b.queue[0]
		b.queue = b.queue[1:]
		b.stuck -= w.held
		b.take(w.n)
		close(w.ready)
	}
}

// Stats reports the bytes in use, the most ever in use and the limit.
func (b *Budget) Stats() (used, peak, limit int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak, b.limit
}

// Account is one query's share of one or more budgets; everything it holds is given back
// by Release. Safe for concurrent use (a query may read two answers at once).
type Account struct {
	mu   sync.Mutex
	held map[*Budget]int64
	done bool
}

// Charge takes n bytes of b for this account, waiting as Budget does. When the account's
// own total would exceed the whole budget it fails at once: no amount of waiting helps.
func (a *Account) Charge(ctx context.Context, b *Budget, n int64) error {
	a.mu.Lock()
	held := a.held[b]
	a.mu.Unlock()
	if held+n > b.limit {
		return &Error{Need: held + n, Limit: b.limit, Setting: b.setting}
	}
	if err := b.acquire(ctx, n, held); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done { // released meanwhile: nothing will give this back later
		b.release(n)
		return errors.New("budget: charge after the account was released")
	}
	if a.held == nil {
		a.held = map[*Budget]int64{}
	}
	a.held[b] += n
	return nil
}

// Release gives back everything the account holds; later charges fail.
func (a *Account) Release() {
	a.mu.Lock()
	held := a.held
	a.held, a.done = nil, true
	a.mu.Unlock()
	for b, n := range held {
		b.release(n)
	}
}

type accountKey struct{}

// Scope starts an account for the work done with the returned context; the caller
// releases it when the query's frames are built.
func Scope(ctx context.Context) (context.Context, *Account) {
	a := &Account{}
	return context.WithValue(ctx, accountKey{}, a), a
}

// FromContext returns the context's account, or nil.
func FromContext(ctx context.Context) *Account {
	a, _ := ctx.Value(accountKey{}).(*Account)
	return a
}
