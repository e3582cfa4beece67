package stack

import (
	"net/http"
	"sync/atomic"
)

// Counts are what one region's emulator saw: every request it received, and the outcome of
// its signature check. Every request is checked first, so once the requests are answered
// Received = Verified + Refused.
type Counts struct {
	Received, Verified, Refused int64
}

type counters struct{ received, ok, refused atomic.Int64 }

// count wraps h so that every request it receives is counted.
func (c *counters) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.received.Add(1)
		h.ServeHTTP(w, r)
	})
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
