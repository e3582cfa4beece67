package converter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/internal/promtest"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// bigAnswer is a query_range answer of the size issue 17 measured: 150 series × 1,440
// points (216,000 points, about 7.3 MB), values written at full float64 precision.
func bigAnswer() []byte {
	return matrixBodyWith(150, 1440, func(s, p int) string { return fmt.Sprintf("%d.%015d", (s*p)%100, (s*7919+p*104729)%1000000007) })
}

// pacedServer serves body in 64 KiB writes with a pause between them, as a network would.
func pacedServer(tb testing.TB, body []byte) *url.URL {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { promtest.WritePaced(w, body) }))
	tb.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// lastByteTransport notes, on the client, when a response body's reader hands over its last
// byte (EOF, or the whole Content-Length read), which is when the client has the answer:
// the server's last write says nothing about how fast the client reads it.
type lastByteTransport struct {
	at atomic.Int64 // UnixNano of the last byte read; 0 until then
}

func (t *lastByteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &lastByteBody{ReadCloser: resp.Body, left: resp.ContentLength, at: &t.at}
	}
	return resp, err
}

type lastByteBody struct {
	io.ReadCloser
	left int64 // bytes still to come if the length is known, else -1
	at   *atomic.Int64
}

func (b *lastByteBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left >= 0 {
		b.left -= int64(n)
	}
	if (err == io.EOF || b.left == 0) && b.at.Load() == 0 {
		b.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// framesBytes is what the frames' vectors hold: the size of one element times the length,
// summed over fields.
func framesBytes(frames data.Frames) uint64 {
	var n uint64
	for _, f := range frames {
		for _, fld := range f.Fields {
			n += uint64(fld.Len()) * uint64(reflect.TypeOf(fld.At(0)).Size())
		}
	}
	return n
}

// TestStreamedEqualsBuffered guards the benchmark: through promclient, the streamed and
// the buffered paths give the same frames.
func TestStreamedEqualsBuffered(t *testing.T) {
	body := matrixBody(7, 300)
	c, err := promclient.New(promclient.Options{BaseURL: pacedServer(t, body), Transport: &lastByteTransport{}, QueryRPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Expr: "x", LegendFormat: "{{gpu}}", Step: 15 * time.Second}
	var answer promclient.Answer
	var raw []byte
	for _, d := range []promclient.Decode{promclient.DecodeAnswer(&answer), promclient.Raw(&raw)} {
		if err := c.Query(context.Background(), "x", time.Time{}, 0, d); err != nil {
			t.Fatal(err)
		}
	}
	streamed, err := Frames(&answer, opts)
	if err != nil {
		t.Fatal(err)
	}
	buffered, err := read(bytes.NewReader(raw), opts)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(streamed)
	bb, _ := json.Marshal(buffered)
	if len(streamed) != 7 || !bytes.Equal(a, bb) {
		t.Fatalf("%d streamed frames; equal to buffered: %v", len(streamed), bytes.Equal(a, bb))
	}
}

// TestLastByteIsTakenOnTheClient guards the benchmark's clock: an answer the server has
// long finished writing counts as arrived only when the client reads its last byte.
func TestLastByteIsTakenOnTheClient(t *testing.T) {
	body := matrixBody(2, 10)
	tr := &lastByteTransport{}
	resp, err := (&http.Client{Transport: tr}).Get(pacedServer(t, body).String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(20 * time.Millisecond) // the server is done; the client has not read yet
	if tr.at.Load() != 0 {
		t.Fatal("the last byte was noted before the client read it")
	}
	readFrom := time.Now().UnixNano()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if at := tr.at.Load(); at < readFrom || at > time.Now().UnixNano() {
		t.Fatalf("last byte at %d, the client read it from %d", at, readFrom)
	}
}

// BenchmarkBigAnswer measures, for the same paced upstream answer in the same run, the
// time from the client reading the body's last byte to finished frames, the total time
// from request to frames, and the peak heap growth, for the streamed path (the converter
// reads the live body) and for the buffered baseline (the whole body read first, then
// converted, as before). Ratios: after-last-byte streamed ÷ buffered (target ≤ 0.5) and
// peak heap ÷ frames produced (target ≤ 1.5).
func BenchmarkBigAnswer(b *testing.B) {
	body := bigAnswer()
	lastByte := &lastByteTransport{}
	c, err := promclient.New(promclient.Options{BaseURL: pacedServer(b, body), Transport: lastByte, QueryRPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Expr: "DCGM_FI_DEV_GPU_UTIL", LegendFormat: "{{@resource.host.id}} {{gpu}}", Step: 15 * time.Second}
	t0 := time.Unix(1764460800, 0)
	call := func(decode promclient.Decode) error {
		return c.QueryRange(context.Background(), opts.Expr, t0, t0.Add(6*time.Hour), 15*time.Second, 0, decode)
	}
	streamed := func() (data.Frames, error) {
		var a promclient.Answer
		if err := call(promclient.DecodeAnswer(&a)); err != nil {
			return nil, err
		}
		return Frames(&a, opts)
	}
	buffered := func() (data.Frames, error) {
		var raw []byte
		if err := call(promclient.Raw(&raw)); err != nil {
			return nil, err
		}
		return read(bytes.NewReader(raw), opts)
	}
	measure := func(run func() (data.Frames, error)) (after, total time.Duration, peak, frames uint64) {
		runtime.GC()
		base := promtest.HeapObjects()
		lastByte.at.Store(0)
		stop := make(chan struct{})
		peakC := promtest.HeapPeak(stop)
		start := time.Now()
		fr, err := run()
		done := time.Now()
		close(stop)
		if err != nil {
			b.Fatal(err)
		}
		p := <-peakC
		runtime.KeepAlive(fr)
		last := lastByte.at.Load()
		if last == 0 || last > done.UnixNano() {
			b.Fatalf("the body's last byte was not seen before the frames were done (at %d, done %d)", last, done.UnixNano())
		}
		return done.Sub(time.Unix(0, last)), done.Sub(start), p - min(p, base), framesBytes(fr)
	}
	var sAfter, bAfter, sTotal, bTotal time.Duration
	var sPeak, bPeak, framesTotal uint64
	for b.Loop() {
		a, t, p, f := measure(streamed)
		sAfter, sTotal, sPeak, framesTotal = sAfter+a, sTotal+t, sPeak+p, framesTotal+f
		a, t, p, _ = measure(buffered)
		bAfter, bTotal, bPeak = bAfter+a, bTotal+t, bPeak+p
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(body))/1e6, "MB-body")
	b.ReportMetric(float64(sAfter.Microseconds())/n/1000, "ms-after-last-byte-streamed")
	b.ReportMetric(float64(bAfter.Microseconds())/n/1000, "ms-after-last-byte-buffered")
	b.ReportMetric(float64(sAfter)/float64(bAfter), "after-ratio")
	b.ReportMetric(float64(sTotal.Microseconds())/n/1000, "ms-total-streamed")
	b.ReportMetric(float64(bTotal.Microseconds())/n/1000, "ms-total-buffered")
	b.ReportMetric(float64(sTotal)/float64(bTotal), "total-ratio")
	b.ReportMetric(float64(framesTotal)/n/1e6, "MB-frames")
	b.ReportMetric(float64(sPeak)/n/1e6, "MB-peak-heap-streamed")
	b.ReportMetric(float64(bPeak)/n/1e6, "MB-peak-heap-buffered")
	b.ReportMetric(float64(sPeak)/float64(framesTotal), "peak/frames-streamed")
	b.ReportMetric(float64(bPeak)/float64(framesTotal), "peak/frames-buffered")
}
