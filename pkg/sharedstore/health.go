package sharedstore

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/internal/plainping"
)

// healthDeadline bounds Save & test's check: longer than an operation's deadline, so a
// store that answers slowly is reported with its round trip instead of as a timeout.
const healthDeadline = 3 * time.Second

// Health is what Save & test reports about a reachable store.
type Health struct {
	Server    string // "Redis" or "Valkey"
	Version   string
	Mode      string // "standalone" or "cluster" (the server's redis_mode)
	RoundTrip time.Duration
	// Slow is set when the round trip is over the operations' deadline: every operation
	// would time out, so the store would never be used.
	Slow error
}

func (h Health) String() string {
	return fmt.Sprintf("shared store reachable: %s %s (%s), round trip %.1f ms", h.Server, h.Version, h.Mode, float64(h.RoundTrip.Microseconds())/1000)
}

// Health connects, reads INFO server and times a PING. The error is an *Error naming the
// cause and the fix. Success ends any backoff. It uses a client of its own, with
// healthDeadline for every timeout, so a store slower than the operations' deadline is
// reported with its round trip.
func (st *Store) Health(ctx context.Context) (Health, error) {
	hctx, cancel := context.WithTimeout(ctx, healthDeadline)
	defer cancel()
	rdb := redis.NewUniversalClient(st.set.options(healthDeadline))
	defer rdb.Close()
	info, err := rdb.Info(hctx, "server").Result()
	if err != nil {
		if ctx.Err() != nil {
			return Health{}, ctx.Err()
		}
		e := st.set.classify("INFO", st.addr(), err)
		if e.Kind == Timeout {
			e = st.set.diagnose(e)
		}
		return Health{}, e
	}
	h := parseInfo(info)
	start := time.Now()
	if err := rdb.Ping(hctx).Err(); err != nil {
		return Health{}, st.set.classify("PING", st.addr(), err)
	}
	h.RoundTrip = time.Since(start)
	if h.RoundTrip > st.set.Timeout {
		h.Slow = fmt.Errorf("the round trip, %s, is over %s (%s): every operation would time out; raise it above the round trip or put the store closer to Grafana", h.RoundTrip.Round(time.Microsecond), st.set.Timeout, SetTimeout)
	}
	st.gate.succeeded()
	return h, nil
}

// diagnose looks behind a timeout, which is all a client sees when a cluster client
// retries a dead node until the deadline, or when a TLS handshake meets a server without
// TLS (it waits for a line end and never answers).
func (s Settings) diagnose(e *Error) *Error {
	addr := s.Addresses[0]
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		if d := s.classify(e.Op, addr, err); d.Kind != Timeout {
			return d
		}
		return e
	}
	_ = c.Close()
	if s.TLS && plainping.Ping(addr, time.Second) == nil {
		e.Kind, e.fix = TLS, fmt.Sprintf("the server does not speak TLS (it answered a plain PING): turn off %s, or enable TLS on the server", SetTLS)
	}
	return e
}

// parseInfo reads INFO server's fields. Valkey reports server_name:valkey and
// valkey_version, and keeps redis_version at 7.2.4 for old clients.
func parseInfo(info string) Health {
	f := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			f[k] = v
		}
	}
	h := Health{Server: "Redis", Version: f["redis_version"], Mode: f["redis_mode"]}
	if f["server_name"] == "valkey" || f["valkey_version"] != "" {
		h.Server, h.Version = "Valkey", f["valkey_version"]
	}
	if h.Version == "" {
		h.Version = "(version not reported)"
	}
	if h.Mode == "" {
		h.Mode = "standalone"
	}
	return h
}
