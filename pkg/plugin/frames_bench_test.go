package plugin

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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/inferscope/sagemaker-datasource/internal/promtest"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

const (
	benchSeries = 1000
	benchPoints = 1440
)

var benchOpts = frameOptions{Expr: "vllm:num_requests_running", LegendFormat: "{{aws.sagemaker.endpoint.name}}", Step: time.Minute}

// benchBody is a query_range response of 1,000 series × 1,440 points (one day at 1m)
// with CloudWatch-style OTel labels.
func benchBody() []byte { return fleetMatrixBody(benchSeries, benchPoints) }

func fleetMatrixBody(series, points int) []byte {
	return fleetMatrixBodyWith(series, points, func(s, p int) string { return fmt.Sprintf("%d.%d", (s*p)%997, p%10) })
}

// matrixBodyWith is matrixBody with the sample values value(series, point) writes.
func fleetMatrixBodyWith(series, points int, value func(s, p int) string) []byte {
	var sb strings.Builder
	sb.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	start := int64(1764460800)
	for s := range series {
		if s > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"metric":{"__name__":"vllm:num_requests_running","aws.sagemaker.endpoint.name":"ep-%d","aws.sagemaker.inference_component.name":"ic-%d","@resource.host.id":"i-%08x","@resource.host.type":"ml.g6e.12xlarge","@aws.region":"us-east-1","__type__":"Gauge"},"values":[`, s%40, s, s)
		for p := range points {
			if p > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `[%d.%03d,"%s"]`, start+int64(p)*60, p%1000, value(s, p))
		}
		sb.WriteString(`]}`)
	}
	sb.WriteString(`]}}`)
	return []byte(sb.String())
}

func convertOurs(body []byte) (data.Frames, error) {
	return readFrames(bytes.NewReader(body), benchOpts)
}

// memoryTransport answers every request with the same body, so the baseline runs
// client_golang's real request and decoding path without a network.
type memoryTransport []byte

func (m memoryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(m)),
		Request:    r,
	}, nil
}

// convertClientGolang is the baseline: decode with client_golang's api/prometheus/v1
// (model.Matrix via encoding/json, as the library does), then build the same frames from
// an Answer holding its samples.
func convertClientGolang(promAPI v1.API) (data.Frames, error) {
	end := time.Unix(1764460800+benchPoints*60, 0)
	value, warnings, infos, err := promAPI.QueryRange(context.Background(), benchOpts.Expr, v1.Range{Start: end.Add(-24 * time.Hour), End: end, Step: time.Minute})
	if err != nil {
		return nil, err
	}
	matrix, ok := value.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("got %T, want a matrix", value)
	}
	a := &promclient.Answer{Type: "matrix", Warnings: warnings, Infos: infos}
	for _, stream := range matrix {
		s := promclient.Series{Labels: make(data.Labels, len(stream.Metric))}
		for k, v := range stream.Metric {
			s.Labels[string(k)] = string(v)
		}
		for _, p := range stream.Values {
			s.T, s.V = append(s.T, int64(p.Timestamp)), append(s.V, float64(p.Value))
		}
		a.Series = append(a.Series, s)
	}
	return framesOf(a, benchOpts)
}

func newBaselineAPI(b testing.TB, body []byte) v1.API {
	client, err := api.NewClient(api.Config{Address: "http://127.0.0.1:9090", RoundTripper: memoryTransport(body)})
	if err != nil {
		b.Fatal(err)
	}
	return v1.NewAPI(client)
}

// TestBaselineMatchesConverter guards the benchmark: both paths must produce the same
// frames, or the comparison would be meaningless.
func TestBaselineMatchesConverter(t *testing.T) {
	body := fleetMatrixBody(50, 100)
	ours, err := convertOurs(body)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := convertClientGolang(newBaselineAPI(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if len(ours) != 50 || len(theirs) != 50 {
		t.Fatalf("frames: ours %d, baseline %d", len(ours), len(theirs))
	}
	for i := range ours {
		a, _ := ours[i].MarshalJSON()
		b, _ := theirs[i].MarshalJSON()
		if !bytes.Equal(a, b) {
			t.Fatalf("frame %d differs:\n%s\n%s", i, a, b)
		}
	}
}

func benchmarkOurs(body []byte) func(b *testing.B) {
	return func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := convertOurs(body); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchmarkClientGolang(body []byte) func(b *testing.B) {
	return func(b *testing.B) {
		promAPI := newBaselineAPI(b, body)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := convertClientGolang(promAPI); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkMatrix reports MB/s and allocations for our converter and for the
// client_golang baseline on the same 1,000 × 1,440 body.
func BenchmarkMatrix(b *testing.B) {
	body := benchBody()
	b.Run("converter", benchmarkOurs(body))
	b.Run("client_golang", benchmarkClientGolang(body))
}

// BenchmarkMatrixRatio runs both paths alternately in each iteration, so they share the
// machine's conditions, and reports the ratios the project's targets are stated in:
// speedup (≥ 2) and allocation ratio (≤ 0.5).
func BenchmarkMatrixRatio(b *testing.B) {
	body := benchBody()
	promAPI := newBaselineAPI(b, body)
	var oursTime, baseTime time.Duration
	var oursAllocs, baseAllocs uint64
	measure := func(run func() error) (time.Duration, uint64) {
		// Start each side from a collected heap so neither pays for the other's garbage.
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return elapsed, after.Mallocs - before.Mallocs
	}
	for b.Loop() {
		d, a := measure(func() error { _, err := convertOurs(body); return err })
		oursTime, oursAllocs = oursTime+d, oursAllocs+a
		d, a = measure(func() error { _, err := convertClientGolang(promAPI); return err })
		baseTime, baseAllocs = baseTime+d, baseAllocs+a
	}
	mb := float64(len(body)) * float64(b.N) / 1e6
	b.ReportMetric(mb/oursTime.Seconds(), "MB/s-ours")
	b.ReportMetric(mb/baseTime.Seconds(), "MB/s-baseline")
	b.ReportMetric(float64(baseTime)/float64(oursTime), "speedup")
	b.ReportMetric(float64(oursAllocs)/float64(baseAllocs), "alloc-ratio")
}

// bigAnswer is a query_range answer of the size docs/benchmarks.md measures: 150 series × 1,440
// points (216,000 points, about 7.3 MB), values written at full float64 precision.
func bigAnswer() []byte {
	return fleetMatrixBodyWith(150, 1440, func(s, p int) string { return fmt.Sprintf("%d.%015d", (s*p)%100, (s*7919+p*104729)%1000000007) })
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
	body := fleetMatrixBody(7, 300)
	c, err := promclient.New(promclient.Options{BaseURL: pacedServer(t, body), Transport: &lastByteTransport{}, QueryRPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	opts := frameOptions{Expr: "x", LegendFormat: "{{gpu}}", Step: 15 * time.Second}
	var answer promclient.Answer
	var raw []byte
	for _, d := range []promclient.Decode{promclient.DecodeAnswer(&answer), promclient.Raw(&raw)} {
		if err := c.Query(context.Background(), "x", time.Time{}, 0, d); err != nil {
			t.Fatal(err)
		}
	}
	streamed, err := framesOf(&answer, opts)
	if err != nil {
		t.Fatal(err)
	}
	buffered, err := readFrames(bytes.NewReader(raw), opts)
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
	body := fleetMatrixBody(2, 10)
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
	opts := frameOptions{Expr: "DCGM_FI_DEV_GPU_UTIL", LegendFormat: "{{@resource.host.id}} {{gpu}}", Step: 15 * time.Second}
	t0 := time.Unix(1764460800, 0)
	call := func(decode promclient.Decode) error {
		return c.QueryRange(context.Background(), opts.Expr, t0, t0.Add(6*time.Hour), 15*time.Second, 0, decode)
	}
	streamed := func() (data.Frames, error) {
		var a promclient.Answer
		if err := call(promclient.DecodeAnswer(&a)); err != nil {
			return nil, err
		}
		return framesOf(&a, opts)
	}
	buffered := func() (data.Frames, error) {
		var raw []byte
		if err := call(promclient.Raw(&raw)); err != nil {
			return nil, err
		}
		return readFrames(bytes.NewReader(raw), opts)
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
