package promclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// cutBody answers 200 with a Content-Length longer than what it writes, then drops the
// connection: the client sees the body end early (io.ErrUnexpectedEOF).
func cutBody(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Length", fmt.Sprint(len(body)+100))
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, body)
	w.(http.Flusher).Flush()
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// TestStreamedBodyFaultsAreRetried: a 2xx body cut off mid-way, or one that is not a
// Prometheus answer, is retried like a 5xx, and the decoder starts again on the new body.
func TestStreamedBodyFaultsAreRetried(t *testing.T) {
	full := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1,"2"]}]}}`
	tests := []struct {
		name      string
		bad       func(w http.ResponseWriter)
		failFirst int32 // answers that are bad before a good one
		wantErr   func(error) bool
	}{
		{"cut off once", func(w http.ResponseWriter) { cutBody(w, full[:40]) }, 1, nil},
		{"not JSON once", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "<html>proxy</html>") }, 1, nil},
		{"truncated JSON once", func(w http.ResponseWriter) { _, _ = io.WriteString(w, full[:50]) }, 1, nil},
		{"cut off every time", func(w http.ResponseWriter) { cutBody(w, full[:40]) }, 99, func(err error) bool {
			var be *BodyError
			return errors.As(err, &be) && be.Cut && be.Attempts == DefaultMaxAttempts && be.Bytes == 40
		}},
		{"malformed every time", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "[1,2]") }, 99, func(err error) bool {
			var be *BodyError
			return errors.As(err, &be) && !be.Cut && be.Attempts == DefaultMaxAttempts && strings.Contains(err.Error(), "not a JSON object")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hits.Add(1) <= tc.failFirst {
					tc.bad(w)
					return
				}
				_, _ = io.WriteString(w, full)
			})
			c, _ := newTestClient(t, h, nil)
			runs := 0
			var got []string
			err := c.Query(context.Background(), "up", t0, 0, func(r io.Reader) error {
				runs++
				got = got[:0]
				var res struct {
					Result []struct{ Metric map[string]string } `json:"result"`
				}
				if err := Data(&res)(r); err != nil {
					return err
				}
				for _, s := range res.Result {
					got = append(got, s.Metric["a"])
				}
				return nil
			})
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("err %#v (%v)", err, err)
				}
				if int(hits.Load()) != DefaultMaxAttempts {
					t.Errorf("%d requests, want %d", hits.Load(), DefaultMaxAttempts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if runs != 2 || hits.Load() != 2 || len(got) != 1 || got[0] != "b" {
				t.Errorf("decoder ran %d times over %d requests, result %v; want 2, 2, [b]", runs, hits.Load(), got)
			}
		})
	}
}

// TestStreamedBodyNotRetried: what retrying cannot fix comes back at once.
func TestStreamedBodyNotRetried(t *testing.T) {
	capErr := &TooLargeError{Limit: 1, Unit: "points"}
	tests := []struct {
		name    string
		body    string
		maxBody int64
		decode  Decode
		want    func(error) bool
	}{
		{"body beyond MaxResponseBytes", okBody, 10, nil, func(err error) bool {
			var te *TooLargeError
			return errors.As(err, &te) && te.Unit == "bytes" && te.Limit == 10
		}},
		{"decoder's own cap", okBody, 0, func(io.Reader) error { return capErr }, func(err error) bool { return errors.Is(err, capErr) }},
		{"error envelope in a 2xx", `{"status":"error","errorType":"execution","error":"boom"}`, 0, nil, func(err error) bool {
			var ae *APIError
			return errors.As(err, &ae) && ae.Status == 200 && ae.Type == "execution" && ae.Message == "boom" && !ae.Retryable()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				_, _ = io.WriteString(w, tc.body)
			})
			c, _ := newTestClient(t, h, func(o *Options) { o.MaxResponseBytes = tc.maxBody })
			err := c.Query(context.Background(), "up", t0, 0, tc.decode)
			if !tc.want(err) || hits.Load() != 1 {
				t.Errorf("err %#v after %d requests", err, hits.Load())
			}
		})
	}
}

// TestConnectionRefusedIsNotRetried keeps transport failures before any answer as they are.
func TestConnectionRefusedIsNotRetried(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	c, _ := newTestClient(t, http.NotFoundHandler(), func(o *Options) { o.BaseURL.Host = addr })
	var op *net.OpError
	if err := c.Query(context.Background(), "up", t0, 0, nil); !errors.As(err, &op) {
		t.Errorf("err %v, want a *net.OpError", err)
	}
}

// TestDecodePanicFreesTheSlot: a decoder that panics (the plugin recovers it per query)
// still closes the body and frees its slot, so the next call of a one-slot client runs.
func TestDecodePanicFreesTheSlot(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, okBody) })
	c, _ := newTestClient(t, h, func(o *Options) { o.MaxConcurrency = 1 })
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the decoder's panic did not reach the caller")
			}
		}()
		_ = c.Query(context.Background(), "up", t0, 0, func(io.Reader) error { panic("decoder bug") })
	}()
	// The deadline only bounds a failure: a leaked slot would make this call wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Query(ctx, "up", t0, 0, nil); err != nil {
		t.Fatalf("the call after a decoder panic: %v", err)
	}
}
