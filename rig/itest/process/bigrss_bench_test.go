package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/internal/promtest"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// BenchmarkBigAnswerRSS sends one 500-series × 2,900-point answer (about 46 MiB of JSON)
// through the built plugin binary over gRPC, each iteration in a new plugin process, with
// the default results cache and without a cache. It reports the process's peak RSS growth
// over its peak after a warm-up query (VmHWM), as MiB and divided by the body's size, and
// the time from the upstream's last write of the body (paced in 64 KiB writes, as a network
// delivers it) to QueryData returning at the client (decoding what is still buffered,
// building the frames, encoding and sending them).
func BenchmarkBigAnswerRSS(b *testing.B) {
	const series, points = 500, 2900
	t0 := time.Unix(1764460800, 0).UTC()
	body := promtest.CloudWatchMatrix(t0, series, points)
	small := promtest.CloudWatchMatrix(t0, 1, 10)
	var lastWrite atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("query") != "big" {
			w.Header().Set("Content-Length", strconv.Itoa(len(small)))
			_, _ = w.Write(small)
			return
		}
		promtest.WritePaced(w, body)
		lastWrite.Store(time.Now().UnixNano())
	}))
	defer srv.Close()
	bin := buildPlugin(b, b.TempDir())
	// The last mode is the same run's baseline for the plugin's GC setting (pkg/main.go): Go's
	// default GOGC.
	modes := []struct {
		name         string
		cacheSizeMiB int // < 0: left out, the default cache
		env          []string
	}{{"cached", -1, nil}, {"uncached", 0, nil}, {"cached-gogc100", -1, []string{"GOGC=100"}}}
	type sums struct {
		growth int64
		after  time.Duration
	}
	got := make([]sums, len(modes))
	i := 0
	for b.Loop() {
		for j := range modes {
			m := modes[(i+j)%len(modes)]
			g, after := bigRSSRun(b, bin, srv.URL, m.cacheSizeMiB, m.env, t0, points, series, &lastWrite)
			got[(i+j)%len(modes)].growth += g
			got[(i+j)%len(modes)].after += after
		}
		i++
	}
	n := float64(i)
	b.ReportMetric(float64(len(body))/(1<<20), "MiB-body")
	for j, m := range modes {
		b.ReportMetric(float64(got[j].growth)/n/(1<<20), m.name+"-rss-growth-MiB")
		b.ReportMetric(float64(got[j].growth)/n/float64(len(body)), m.name+"-rss/body")
		b.ReportMetric(float64(got[j].after.Microseconds())/n/1000, m.name+"-ms-after-last-byte")
	}
}

// bigRSSRun starts a plugin process, warms it up with a small query, then asks the big one
// and returns the peak RSS growth and the time after the upstream's last write.
func bigRSSRun(b *testing.B, bin, upstream string, cacheSizeMiB int, env []string, t0 time.Time, points, series int, lastWrite *atomic.Int64) (int64, time.Duration) {
	p := startPlugin(b, bin, env...)
	defer p.Close()
	jd := map[string]any{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": upstream, "requestsPerSecond": 300}
	if cacheSizeMiB >= 0 {
		jd["cacheSizeMiB"] = cacheSizeMiB
	}
	raw, _ := json.Marshal(jd)
	pc := backend.PluginContext{OrgID: 1, PluginID: models.PluginID, DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
		ID: 1, UID: "big", Type: models.PluginID, JSONData: raw, Updated: time.Now(),
		DecryptedSecureJSONData: map[string]string{"accessKey": "AKIDBIGRSSBENCH", "secretKey": "big-rss-bench-secret"}}}
	ask := func(expr string) (int, error) {
		q := backend.DataQuery{RefID: "A", JSON: []byte(`{"expr":"` + expr + `","range":true}`), MaxDataPoints: int64(points), Interval: time.Minute,
			TimeRange: backend.TimeRange{From: t0, To: t0.Add(time.Duration(points-1) * time.Minute)}}
		resp, err := p.QueryData(context.Background(), &backend.QueryDataRequest{PluginContext: pc, Queries: []backend.DataQuery{q}})
		if err != nil {
			return 0, err
		}
		dr := resp.Responses["A"]
		if dr.Error != nil {
			return 0, dr.Error
		}
		return len(dr.Frames), nil
	}
	if _, err := ask("small"); err != nil {
		b.Fatal(err)
	}
	base := peakRSS(b, p.PID)
	lastWrite.Store(0)
	frames, err := ask("big")
	done := time.Now()
	if err != nil || frames != series {
		b.Fatalf("cacheSizeMiB %d: %d frames, %v; want %d", cacheSizeMiB, frames, err, series)
	}
	return peakRSS(b, p.PID) - base, done.Sub(time.Unix(0, lastWrite.Load()))
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status for the plugin process: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM line")
	return 0
}
