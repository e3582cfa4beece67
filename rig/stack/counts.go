package stack

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Counts are what one region's emulator saw: every request it received, and the outcome of
// its signature check. Every request is checked first, so once the requests are answered
// Received = Verified + Refused.
type Counts struct {
	Received, Verified, Refused int64
}

type counters struct {
	received, ok, refused atomic.Int64
	discovery             discoveryLog
}

// count wraps h so that every request it receives is counted, and discovery requests logged.
func (c *counters) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.received.Add(1)
		if !isDiscovery(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		at := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		region, _ := scope(r)
		c.discovery.add(DiscoveryRequest{At: at, Status: sw.status, Region: region})
	})
}

// isDiscovery reports whether path is one of CloudWatch's discovery APIs, which share the
// discovery rate limit: series, labels and label values.
func isDiscovery(path string) bool {
	return path == "/api/v1/series" || path == "/api/v1/labels" ||
		(strings.HasPrefix(path, "/api/v1/label/") && strings.HasSuffix(path, "/values"))
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

// verified is the emulator's Config.Verified hook.
func (c *counters) verified(err error) {
	if err != nil {
		c.refused.Add(1)
		return
	}
	c.ok.Add(1)
}

func (c *counters) read() Counts {
	return Counts{Received: c.received.Load(), Verified: c.ok.Load(), Refused: c.refused.Load()}
}

// DiscoveryRequest is one discovery call the emulator answered: when it arrived, its HTTP
// status (422 when over the discovery rate limit, 429 over its concurrency) and the region
// its SigV4 credential scope names: CloudWatch's discovery budget is per account and region,
// and a single-region stack also answers (and refuses) calls signed for other regions.
type DiscoveryRequest struct {
	At     time.Time `json:"at"`
	Status int       `json:"status"`
	Region string    `json:"region,omitempty"`
}

// discoveryLogSize bounds the log: a long-running emulator keeps only the latest requests.
const discoveryLogSize = 4096

// discoveryLog is a ring of the latest discovery requests.
type discoveryLog struct {
	mu   sync.Mutex
	ring [discoveryLogSize]DiscoveryRequest
	n    int // requests logged in all
}

func (l *discoveryLog) add(r DiscoveryRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.n%discoveryLogSize] = r
	l.n++
}

// since returns the logged requests that arrived at or after t, oldest first.
func (l *discoveryLog) since(t time.Time) []DiscoveryRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := []DiscoveryRequest{}
	for i := max(0, l.n-discoveryLogSize); i < l.n; i++ {
		if r := l.ring[i%discoveryLogSize]; !r.At.Before(t) {
			out = append(out, r)
		}
	}
	return out
}
