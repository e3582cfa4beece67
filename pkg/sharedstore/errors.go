package sharedstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kind is why the store could not serve an operation.
type Kind string

const (
	Refused     Kind = "refused"     // nothing listens at the address
	Unreachable Kind = "unreachable" // no such host, no route
	Timeout     Kind = "timeout"     // no answer within the deadline (slow, paused, firewalled)
	Closed      Kind = "closed"      // the connection dropped (restart, TLS expected, idle kill)
	Auth        Kind = "auth"        // NOAUTH, WRONGPASS, NOPERM
	TLS         Kind = "tls"         // handshake or certificate failure
	Full        Kind = "full"        // OOM: maxmemory reached under noeviction
	Server      Kind = "server"      // any other error the server answered
)

// backsOff says whether the kind means the store cannot be reached as configured, so that
// asking again at once would only repeat it: such failures pause the store's use.
func (k Kind) backsOff() bool {
	switch k {
	case Full, Server:
		return false // the server answered: reads still work, and the next call costs one round trip
	}
	return true
}

// Error is a store failure. Callers fall back to their local cache and limiter; the text
// (shown once as "shared cache unavailable: …") names the cause and the fix.
type Error struct {
	Op   string
	Kind Kind
	Addr string
	Err  error
	// RetryAt is set when the operation was not tried because the store is backing off
	// after Err: it is when the store will be tried again.
	RetryAt time.Time
	fix     string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("shared cache unavailable: ")
	if !e.RetryAt.IsZero() {
		fmt.Fprintf(&b, "not tried (retried after %s) since ", e.RetryAt.UTC().Format("15:04:05.000"))
	}
	fmt.Fprintf(&b, "%s at %s: %s (%v)", e.Op, e.Addr, e.Kind, e.Err)
	if e.fix != "" {
		b.WriteString(": ")
		b.WriteString(e.fix)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsUnavailable says whether err is the store's failure (an *Error): the caller should go on
// without the store, with its local cache and its local limiter at a conservative share.
func IsUnavailable(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// classify makes err an *Error with its kind and fix.
func (s Settings) classify(op, addr string, err error) *Error {
	e := &Error{Op: op, Addr: addr, Err: err}
	var (
		dnsErr   *net.DNSError
		recErr   tls.RecordHeaderError
		certErr  *tls.CertificateVerificationError
		authErr  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		alertErr tls.AlertError
		timeoutE interface{ Timeout() bool }
	)
	msg := err.Error()
	switch {
	case redis.IsAuthError(err) || redis.IsPermissionError(err):
		e.Kind = Auth
		e.fix = fmt.Sprintf("set %s (and %s for an ACL user) to the store's credentials", SetPassword, SetUsername)
		if redis.IsPermissionError(err) {
			e.fix = "the store's ACL user lacks a permission the plugin needs: grant +@read +@write +@scripting +ping +info +time (and +cluster|slots +cluster|shards on a cluster) on ~" + s.KeyPrefix + "* and ~" + budgetPrefix + "*"
		}
	case redis.IsOOMError(err):
		e.Kind = Full
		e.fix = "the store reached maxmemory under maxmemory-policy noeviction: set maxmemory-policy allkeys-lru (cached extents may be evicted), or give it more memory"
	case errors.As(err, &recErr) || errors.As(err, &certErr) || errors.As(err, &authErr) || errors.As(err, &hostErr) || errors.As(err, &alertErr) || strings.HasPrefix(msg, "tls: "):
		e.Kind = TLS
		switch {
		case errors.As(err, &recErr):
			e.fix = fmt.Sprintf("the server does not speak TLS: turn off %s, or enable TLS on the server", SetTLS)
		case errors.As(err, &hostErr):
			e.fix = fmt.Sprintf("set %s to a name the server's certificate carries (for ElastiCache, connect to its endpoint name, not an IP)", SetTLSServerName)
		case errors.As(err, &authErr):
			e.fix = fmt.Sprintf("set %s to the CA that signed the server's certificate (empty: the system's roots, enough for ElastiCache and MemoryDB)", SetTLSCACert)
		default:
			e.fix = fmt.Sprintf("check %s (the CA that signed the server's certificate) and %s (a name it carries)", SetTLSCACert, SetTLSServerName)
		}
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &timeoutE) && timeoutE.Timeout():
		e.Kind = Timeout
		e.fix = fmt.Sprintf("no answer in time: the store is slow, paused, overloaded or behind a firewall that drops packets; check it (operations wait at most %s, %s)", s.Timeout, SetTimeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Kind = Refused
		e.fix = fmt.Sprintf("nothing listens there: check %s and that the server runs", SetAddresses)
	case errors.As(err, &dnsErr) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		e.Kind = Unreachable
		e.fix = fmt.Sprintf("check the host name in %s and the network path from Grafana to the store", SetAddresses)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed):
		e.Kind = Closed
		e.fix = "the store closed the connection: it restarted or dropped the client (used again after a backoff)"
		if !s.TLS {
			e.fix += fmt.Sprintf("; if it requires TLS (ElastiCache and MemoryDB in-transit encryption), turn on %s", SetTLS)
		}
	default:
		e.Kind = Server
	}
	return e
}

// gate pauses the store's use after a failure that backsOff, so a dead store costs one
// deadline per backoff period instead of one per panel: exponential from minBackoff to
// maxBackoff with jitter, one probe let through when the period ends.
type gate struct {
	mu       sync.Mutex
	now      func() time.Time
	failures int
	retryAt  time.Time
	last     *Error
}

const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// admit returns nil when the operation may run, or the last failure marked not tried.
func (g *gate) admit(op string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failures == 0 {
		return nil
	}
	now := g.now()
	if now.Before(g.retryAt) {
		skipped := *g.last
		skipped.Op, skipped.RetryAt = op, g.retryAt
		return &skipped
	}
	// This call is the probe: the others wait for its outcome as if still backing off.
	g.retryAt = now.Add(minBackoff)
	return nil
}

func (g *gate) succeeded() {
	g.mu.Lock()
	g.failures, g.last = 0, nil
	g.mu.Unlock()
}

func (g *gate) failed(e *Error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failures++
	d := minBackoff << min(g.failures-1, 10)
	d = min(d, maxBackoff)
	d = d - d/5 + rand.N(d/5+1) // #nosec G404 -- jitter spreads the replicas' retries; not a secret
	g.retryAt, g.last = g.now().Add(d), e
}

// backingOff is the failure the store is backing off from, or nil.
func (g *gate) backingOff() *Error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}
