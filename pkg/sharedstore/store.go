package sharedstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// Store is a connection to the shared store. Safe for concurrent use.
type Store struct {
	set   Settings
	rdb   redis.UniversalClient
	gate  gate
	stats counters
}

// Stats are the store's counters since it was opened.
type Stats struct {
	Ops, Failures, Skipped int64 // operations run, failed, not tried while backing off
	// LostLeases counts the extents not published because their writer's lease had run out
	// (another replica may have published a newer one since).
	LostLeases int64
	// Rejected counts the entries read but not trusted, by DecodeError reason (bad
	// checksum, unknown version, malformed) or MissingChunk; each was served as a miss.
	Rejected map[string]int64
}

type counters struct {
	ops, failures, skipped                 atomic.Int64
	badChecksum, unknownVersion, malformed atomic.Int64
	missingChunk, lostLeases               atomic.Int64
}

func (c *counters) rejected(reason string) {
	switch reason {
	case entry.BadChecksum:
		c.badChecksum.Add(1)
	case entry.UnknownVersion:
		c.unknownVersion.Add(1)
	case MissingChunk:
		c.missingChunk.Add(1)
	default:
		c.malformed.Add(1)
	}
}

// Open builds the store's client. It does not connect: the first operation (or Health)
// does, so a store that is down when Grafana starts costs nothing until it is used.
func Open(s Settings) (*Store, error) {
	if !s.Enabled() {
		return nil, fmt.Errorf("no shared store configured: set %s", SetAddresses)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	st := &Store{set: s}
	st.gate.now = time.Now
	st.rdb = redis.NewUniversalClient(s.options(s.Timeout))
	return st, nil
}

// options are the client's options for operations that take at most timeout.
func (s Settings) options(timeout time.Duration) *redis.UniversalOptions {
	opts := &redis.UniversalOptions{
		Addrs:         s.Addresses,
		IsClusterMode: s.Cluster,
		DB:            s.Database,
		Username:      s.Username,
		Password:      s.Password.Reveal(),
		TLSConfig:     s.tlsConfig(),
		// The deadline is the caller's context (do adds Timeout); the socket timeouts
		// only back it up for calls that reach the client without one.
		ContextTimeoutEnabled: true,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		PoolTimeout:           timeout,
		// One retry, at once: it renews a pooled connection the server dropped (restart)
		// within the same deadline; anything longer is the gate's backoff.
		MaxRetries:      1,
		MinRetryBackoff: -1,
		MaxRetryBackoff: -1,
		DialerRetries:   1,
		// CLIENT SETINFO is unknown to Redis before 7.2 and, like CLIENT SETNAME (hence no
		// ClientName), needs an ACL permission more than docs/high-availability.md asks for.
		DisableIdentity: true,
	}
	opts.Dialer = dialer(timeout, opts.TLSConfig)
	return opts
}

// quiet drops go-redis' own log: it prints every failed dial, per operation, while the
// store's failures reach the caller as an *Error that is reported once.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// dialer honours the context during the TLS handshake too (tls.DialWithDialer does not).
func dialer(timeout time.Duration, tc *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if tc == nil {
		return nd.DialContext
	}
	td := &tls.Dialer{NetDialer: nd, Config: tc}
	return td.DialContext
}

// Close ends the store's connections.
func (st *Store) Close() error { return st.rdb.Close() }

// ErrClosed is an operation's error after Close: not the store's failure (IsUnavailable is
// false), so no outage is reported for it.
var ErrClosed = errors.New("the shared store's client was closed: the data source's instance was replaced")

// Stats returns the store's counters.
func (st *Store) Stats() Stats {
	c := &st.stats
	return Stats{Ops: c.ops.Load(), Failures: c.failures.Load(), Skipped: c.skipped.Load(), LostLeases: c.lostLeases.Load(), Rejected: map[string]int64{
		entry.BadChecksum: c.badChecksum.Load(), entry.UnknownVersion: c.unknownVersion.Load(), entry.Malformed: c.malformed.Load(),
		MissingChunk: c.missingChunk.Load(),
	}}
}

// Unavailable is the failure the store is backing off from (nil when it is in use): the
// reason a caller shows once as its notice.
func (st *Store) Unavailable() error {
	if e := st.gate.backingOff(); e != nil {
		return e
	}
	return nil
}

// do runs fn under the store's deadline and the gate. redis.Nil (a miss) passes through
// as it is; any other failure is an *Error. A context the caller cancelled is returned as
// its own error, without counting against the store; a chunked operation's total deadline
// (chunked) is the store's timeout.
func (st *Store) do(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if err := st.gate.admit(op); err != nil {
		st.stats.skipped.Add(1)
		return err
	}
	st.stats.ops.Add(1)
	octx, cancel := context.WithTimeout(ctx, st.set.Timeout)
	defer cancel()
	err := fn(octx)
	if err == nil || errors.Is(err, redis.Nil) {
		st.gate.succeeded()
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		<-ctx.Done() // the operation saw ctx's deadline a moment before ctx's own timer did
	}
	switch {
	case errors.Is(context.Cause(ctx), errChunkedDeadline):
		err = fmt.Errorf("%w: %w", errChunkedDeadline, err)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if errors.Is(err, redis.ErrClosed) {
		return ErrClosed // our own doing: no failure of the store
	}
	st.stats.failures.Add(1)
	e := st.set.classify(op, st.addr(), err)
	if e.Kind.backsOff() {
		st.gate.failed(e)
	} else {
		st.gate.succeeded()
	}
	return e
}

func (st *Store) addr() string { return strings.Join(st.set.Addresses, ",") }

// Get reads a key: ok is false on a miss.
func (st *Store) Get(ctx context.Context, key string) (val []byte, ok bool, err error) {
	err = st.do(ctx, "GET", func(ctx context.Context) error {
		val, err = st.rdb.Get(ctx, key).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return val, err == nil, err
}

// Set writes a key that expires after ttl.
func (st *Store) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if err := atLeastMs("ttl", ttl); err != nil {
		return err
	}
	return st.do(ctx, "SET", func(ctx context.Context) error {
		return st.rdb.Set(ctx, key, val, ttl).Err()
	})
}

// run runs a script under the store's deadline; redis.Nil (a nil reply) passes through.
func (st *Store) run(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) (res any, err error) {
	err = st.do(ctx, op, func(ctx context.Context) error {
		res, err = sc.Run(ctx, st.rdb, keys, args...).Result()
		return err
	})
	return res, err
}

// atLeastMs checks a duration the store counts in milliseconds: zero would mean no expiry
// at all (an entry or a lease that never ends).
func atLeastMs(what string, d time.Duration) error {
	if d < time.Millisecond {
		return fmt.Errorf("%s %s: use at least 1ms", what, d)
	}
	return nil
}
