// Package decodegate keeps a core for small answers while large ones are decoded. Go's
// scheduler has no priorities: with every core busy converting megabytes of range answers,
// a stat panel's few hundred bytes wait in the run queue behind them (tens of ms per
// hand-off on two cores). A gated decode parses freely up to a threshold of bytes; beyond
// it, it parses only while holding one of fewer tokens than there are cores, and hands the
// token back whenever it goes back to its body for more bytes, so waiting on the network
// never holds one and a core stays free for the small answers.
package decodegate

import (
	"io"
	"runtime"
)

// DefaultThreshold is how many bytes a decode reads before it needs a token: instant
// answers and short tables stay below it; range answers of many series pass it.
const DefaultThreshold = 256 << 10

// Gate hands out the tokens. Safe for concurrent use; one per process (the cores are).
type Gate struct {
	tokens    chan struct{}
	threshold int64
}

// New builds a gate with n tokens (n ≤ 0: one fewer than GOMAXPROCS, at least one) for
// decodes past threshold bytes.
func New(n int, threshold int64) *Gate {
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return &Gate{tokens: make(chan struct{}, n), threshold: threshold}
}

// Wrap gates decode: its body reader takes a token once more than the threshold has been
// read, and gives it back before each further read of the body and when decode returns
// (or panics). A wait for a token is not cancelled: a holder gives its token back after
// one chunk of parsing, and a read error here would be taken for a malformed answer.
func (g *Gate) Wrap(decode func(io.Reader) error) func(io.Reader) error {
	return func(body io.Reader) error {
		r := &reader{r: body, g: g}
		defer r.put()
		return decode(r)
	}
}

type reader struct {
	r    io.Reader
	g    *Gate
	n    int64
	held bool
}

func (r *reader) Read(p []byte) (int, error) {
	r.put() // the read may wait for the network
	n, err := r.r.Read(p)
	r.n += int64(n)
	if r.n > r.g.threshold {
		r.g.tokens <- struct{}{}
		r.held = true
	}
	return n, err
}

func (r *reader) put() {
	if r.held {
		<-r.g.tokens
		r.held = false
	}
}
