package converter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

const (
	benchSeries = 1000
	benchPoints = 1440
)

var benchOpts = Options{Expr: "vllm:num_requests_running", LegendFormat: "{{aws.sagemaker.endpoint.name}}", Step: time.Minute}

// benchBody is a query_range response of 1,000 series × 1,440 points (one day at 1m)
// with CloudWatch-style OTel labels.
func benchBody() []byte { return matrixBody(benchSeries, benchPoints) }

func matrixBody(series, points int) []byte {
	return matrixBodyWith(series, points, func(s, p int) string { return fmt.Sprintf("%d.%d", (s*p)%997, p%10) })
}

// matrixBodyWith is matrixBody with the sample values value(series, point) writes.
func matrixBodyWith(series, points int, value func(s, p int) string) []byte {
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
	return read(bytes.NewReader(body), benchOpts)
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
	return Frames(a, benchOpts)
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
	body := matrixBody(50, 100)
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
