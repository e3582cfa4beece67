package decodegate

import (
	"bytes"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// parsing counts how many decodes are between two reads of their body (parsing) at once,
// past threshold bytes read, and keeps the most.
type parsing struct {
	mu        sync.Mutex
	threshold int
	now, most int
}

// decode reads its body in random chunks (fixed seed), "parsing" a few ms after each.
func (p *parsing) decode(seed uint64) func(io.Reader) error {
	return func(r io.Reader) error {
		rng := rand.New(rand.NewPCG(seed, 1))
		read := 0
		for {
			buf := make([]byte, 1+rng.IntN(64<<10))
			n, err := r.Read(buf)
			if read += n; read <= p.threshold {
				if err != nil {
					return err
				}
				continue
			}
			p.mu.Lock()
			p.now++
			p.most = max(p.most, p.now)
			p.mu.Unlock()
			time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // parsing what was read
			p.mu.Lock()
			p.now--
			p.mu.Unlock()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// TestGateBoundsLargeDecodes: many decodes of large bodies at once (random chunk sizes,
// fixed seeds) never parse more than the gate's tokens at once past the threshold, use
// all of them, and all finish.
func TestGateBoundsLargeDecodes(t *testing.T) {
	for _, tokens := range []int{1, 3} {
		synctest.Test(t, func(t *testing.T) {
			g := New(tokens, 1<<10)
			large := &parsing{threshold: 1 << 10}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					body := bytes.NewReader(make([]byte, 200<<10))
					if err := g.Wrap(large.decode(uint64(i)))(body); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if large.most != tokens {
				t.Errorf("%d decodes parsing at once past the threshold, want the %d tokens used", large.most, tokens)
			}
		})
	}
}

// TestGateTokensPastThreshold: with the only token held by a decode past the threshold, a
// second large decode waits at its first read past the threshold while a small one runs
// to its end; the token comes back when the holder returns to its body for more bytes.
func TestGateTokensPastThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1, 100)
		pr, pw := io.Pipe()
		holding := make(chan struct{})
		proceed := make(chan struct{})
		go func() {
			_ = g.Wrap(func(r io.Reader) error {
				buf := make([]byte, 1000)
				if _, err := r.Read(buf); err != nil { // 1000 bytes: past the threshold
					return err
				}
				close(holding)
				<-proceed               // parsing, token held
				_, err := io.ReadAll(r) // waiting on the network: token given back
				return err
			})(io.MultiReader(bytes.NewReader(make([]byte, 1000)), pr))
		}()
		<-holding
		small := false
		if err := g.Wrap(func(r io.Reader) error {
			_, err := io.ReadAll(r)
			small = err == nil
			return err
		})(bytes.NewReader(make([]byte, 50))); err != nil || !small {
			t.Fatalf("small decode: %v", err)
		}
		second := make(chan error, 1)
		go func() {
			second <- g.Wrap(func(r io.Reader) error {
				_, err := io.ReadAll(r)
				return err
			})(bytes.NewReader(make([]byte, 5000)))
		}()
		synctest.Wait()
		select {
		case err := <-second:
			t.Fatalf("second large decode finished (%v) while the token was held", err)
		default:
		}
		close(proceed) // the holder reads from the pipe, which blocks: its token goes back
		if err := <-second; err != nil {
			t.Errorf("second large decode: %v", err)
		}
		pw.Close()
	})
}

// TestGatePanic: a decode that panics past the threshold gives its token back.
func TestGatePanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(1, 10)
		func() {
			defer func() { _ = recover() }()
			_ = g.Wrap(func(r io.Reader) error {
				_, _ = r.Read(make([]byte, 100))
				panic("converter bug")
			})(bytes.NewReader(make([]byte, 100)))
		}()
		if err := g.Wrap(func(r io.Reader) error {
			_, err := io.ReadAll(r)
			return err
		})(bytes.NewReader(make([]byte, 100))); err != nil {
			t.Fatalf("after a panic: %v", err)
		}
	})
}
