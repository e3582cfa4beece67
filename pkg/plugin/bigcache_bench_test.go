package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/internal/promtest"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// The big answers start here and have one point a minute: the plugin's step for a range
// of n-1 minutes and maxDataPoints n is one minute (models.ComputeInterval), and the range's ends
// are on that grid, so the request is exactly the served answer's grid.
var bigT0 = time.Unix(1764460800, 0).UTC()

const bigStep = time.Minute

// bigMatrixBody is a query_range matrix answer of series × points on the one-minute grid
// from bigT0 (promtest.CloudWatchMatrix). 150 × 1,440 is the big answer of docs/benchmarks.md
// (216,000 points, about 7.3 MB).
func bigMatrixBody(series, points int) []byte {
	return promtest.CloudWatchMatrix(bigT0, series, points)
}

// bigUpstream serves body for every query_range request on the grid of points minutes from
// bigT0 (anything else is a 400 naming what was asked, which fails the query), in 64 KiB
// writes with a 0.5 ms pause between them, as a network would, with its Content-Length.
func bigUpstream(tb testing.TB, body []byte, points int) string {
	wantStart, wantEnd := bigT0.Unix(), bigT0.Add(time.Duration(points-1)*bigStep).Unix()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		if r.URL.Path != "/api/v1/query_range" || start != float64(wantStart) || end != float64(wantEnd) || step != bigStep.Seconds() {
			http.Error(w, fmt.Sprintf(`{"status":"error","errorType":"bad_data","error":"bench upstream: unexpected %s %v"}`, r.URL.Path, r.Form), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		promtest.WritePaced(w, body)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// lastByteUpstream is the production client (NewClient) with the answer's body noted as
// it is read: at is when the converter reading the answer gets the body's last byte, i.e.
// when the client has the whole answer. This is the plugin's seam for it: NewClient builds its own transport,
// but a ClientFactory may wrap what it returns.
type lastByteUpstream struct {
	Upstream
	size int64        // the body's length
	at   atomic.Int64 // UnixNano of the last byte; 0 until then
}

func (u *lastByteUpstream) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, limit int, decode promclient.Decode) error {
	return u.Upstream.QueryRange(ctx, expr, start, end, step, limit, func(r io.Reader) error {
		return decode(&lastByteReader{r: r, left: u.size, at: &u.at})
	})
}

func (u *lastByteUpstream) CloseIdleConnections() {
	if c, ok := u.Upstream.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type lastByteReader struct {
	r    io.Reader
	left int64
	at   *atomic.Int64
}

func (l *lastByteReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if (l.left <= 0 || err == io.EOF) && l.at.Load() == 0 {
		l.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// bigDatasource builds a data source with the production client, wrapped to note the last
// byte, against upstream; cacheSizeMiB < 0 leaves the setting out (the default cache).
func bigDatasource(tb testing.TB, upstream string, bodySize, cacheSizeMiB int) (*Datasource, *lastByteUpstream) {
	jd := map[string]any{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": upstream, "requestsPerSecond": 300}
	if cacheSizeMiB >= 0 {
		jd["cacheSizeMiB"] = cacheSizeMiB
	}
	raw, _ := json.Marshal(jd)
	var up *lastByteUpstream
	factory := func(ctx context.Context, s *models.Settings, ep awsauth.Endpoint, sh Shared) (Upstream, error) {
		c, err := NewClient(ctx, s, ep, sh)
		if err != nil {
			return nil, err
		}
		up = &lastByteUpstream{Upstream: c, size: int64(bodySize)}
		return up, nil
	}
	d, err := New(context.Background(), backend.DataSourceInstanceSettings{UID: fmt.Sprintf("big-%d", cacheSizeMiB), JSONData: raw,
		DecryptedSecureJSONData: map[string]string{"accessKey": fakeAccessKey, "secretKey": fakeSecretKey}}, factory)
	if err != nil {
		tb.Fatal(err)
	}
	if d.setupErr != nil || up == nil {
		tb.Fatalf("data source setup: %v", d.setupErr)
	}
	if (d.build.cache != nil) != (cacheSizeMiB != 0) {
		tb.Fatalf("cacheSizeMiB %d: results cache present %v", cacheSizeMiB, d.build.cache != nil)
	}
	return d, up
}

// bigQuery is one panel's range query for the points-minute answer.
func bigQuery(points int) *backend.QueryDataRequest {
	model, _ := json.Marshal(map[string]any{"refId": "A", "expr": "vllm:num_requests_running", "range": true, "instant": false,
		"intervalMs": bigStep.Milliseconds(), "maxDataPoints": points})
	return &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", JSON: model,
		TimeRange: backend.TimeRange{From: bigT0, To: bigT0.Add(time.Duration(points-1) * bigStep)},
		Interval:  bigStep, MaxDataPoints: int64(points)}}}
}

// bigFrames runs the query and checks its frames: series frames of points rows each.
func bigFrames(tb testing.TB, d *Datasource, series, points int) data.Frames {
	resp, err := d.QueryData(context.Background(), bigQuery(points))
	if err != nil {
		tb.Fatal(err)
	}
	r := resp.Responses["A"]
	if r.Error != nil {
		tb.Fatal(r.Error)
	}
	checkBigFrames(tb, r.Frames, series, points)
	return r.Frames
}

func checkBigFrames(tb testing.TB, frames data.Frames, series, points int) {
	tb.Helper()
	if len(frames) != series {
		tb.Fatalf("%d frames, want %d series", len(frames), series)
	}
	for i, f := range frames {
		if n, err := f.RowLen(); err != nil || n != points || len(f.Fields) != 2 {
			tb.Fatalf("frame %d: %d rows (%v), %d fields; want %d rows of time and value", i, n, err, len(f.Fields), points)
		}
	}
}

// valueBytes is what the frames' vectors hold: one element's size times the length, summed
// over the fields (as the converter's benchmark counts it).
func valueBytes(frames data.Frames) uint64 {
	var n uint64
	for _, f := range frames {
		for _, fld := range f.Fields {
			if fld.Len() > 0 {
				n += uint64(fld.Len()) * uint64(reflect.TypeOf(fld.At(0)).Size())
			}
		}
	}
	return n
}

// bigRun is one cold QueryData's measurements.
type bigRun struct {
	after, total time.Duration // from the last byte, and from the request, to QueryData returning
	peak, frames uint64        // heap growth over the collected heap before; the frames' vectors
	kept         uint64        // what the results cache holds afterwards (its own count)
}

// measureBig builds a new data source (so the cache, when there is one, is cold: a miss),
// sends the query once and measures it.
func measureBig(b *testing.B, upstream string, bodySize, cacheSizeMiB, series, points int) bigRun {
	d, up := bigDatasource(b, upstream, bodySize, cacheSizeMiB)
	defer d.Dispose()
	runtime.GC()
	base := promtest.HeapObjects()
	stop := make(chan struct{})
	peak := promtest.HeapPeak(stop)
	start := time.Now()
	resp, err := d.QueryData(context.Background(), bigQuery(points))
	done := time.Now()
	close(stop)
	p := <-peak
	if err != nil {
		b.Fatal(err)
	}
	r := resp.Responses["A"]
	if r.Error != nil {
		b.Fatal(r.Error)
	}
	checkBigFrames(b, r.Frames, series, points)
	last := up.at.Load()
	if last == 0 || last > done.UnixNano() {
		b.Fatalf("cacheSizeMiB %d: the body's last byte was not read before QueryData returned (at %d, returned %d)", cacheSizeMiB, last, done.UnixNano())
	}
	var kept uint64
	if d.build.cache != nil {
		kept = uint64(d.build.cache.Stats().Bytes)
	}
	return bigRun{after: done.Sub(time.Unix(0, last)), total: done.Sub(start), peak: p - min(p, base), frames: valueBytes(r.Frames), kept: kept}
}

// BenchmarkBigAnswerCached measures the big answer (150 series × 1,440 points,
// about 7.3 MB, served paced in 64 KiB writes) through the plugin's whole query path
// (QueryData, the production client and converter) with the default results cache
// (cacheSizeMiB left out: the default) and without it (cacheSizeMiB 0), in the same run, each
// iteration a new data source per mode so the cache always misses. For each mode: the time
// from the client reading the body's last byte to QueryData returning the frames ("after",
// see lastByteUpstream for where it is taken), the total time, and the peak live-heap growth
// over the collected heap before, divided by the bytes the frames' vectors hold. Issue 17's
// targets: after-last-byte ≤ 0.5× the old buffered path (BenchmarkBigAnswer in
// frames_bench_test.go measures that baseline), peak heap ≤ 1.5× the frames; cached/uncached-after
// says how far the cached path is from the streamed one. cached-kept-MB is what the cache
// holds after the query, and cached-peak-less-kept/frames the peak without it.
func BenchmarkBigAnswerCached(b *testing.B) {
	const series, points = 150, 1440
	body := bigMatrixBody(series, points)
	upstream := bigUpstream(b, body, points)
	modes := []struct {
		name         string
		cacheSizeMiB int
	}{{"cached", -1}, {"uncached", 0}}
	sums := make([]bigRun, len(modes))
	i := 0
	for b.Loop() {
		for j := range modes {
			m := (i + j) % len(modes) // alternate which mode goes first
			r := measureBig(b, upstream, len(body), modes[m].cacheSizeMiB, series, points)
			s := &sums[m]
			s.after, s.total, s.peak, s.frames, s.kept = s.after+r.after, s.total+r.total, s.peak+r.peak, s.frames+r.frames, s.kept+r.kept
		}
		i++
	}
	n := float64(i)
	b.ReportMetric(float64(len(body))/1e6, "MB-body")
	b.ReportMetric(float64(sums[1].frames)/n/1e6, "MB-frames")
	for j, m := range modes {
		s := sums[j]
		b.ReportMetric(float64(s.after.Microseconds())/n/1000, m.name+"-after-ms")
		b.ReportMetric(float64(s.total.Microseconds())/n/1000, m.name+"-total-ms")
		b.ReportMetric(float64(s.peak)/n/1e6, m.name+"-peak-MB")
		b.ReportMetric(float64(s.peak)/float64(s.frames), m.name+"-peak/frames")
	}
	// The cache's copy is memory it keeps on purpose (bounded by cacheSizeMiB); the rest of
	// the peak is the query's own.
	b.ReportMetric(float64(sums[0].kept)/n/1e6, "cached-kept-MB")
	b.ReportMetric(float64(sums[0].peak-min(sums[0].peak, sums[0].kept))/float64(sums[0].frames), "cached-peak-less-kept/frames")
	b.ReportMetric(float64(sums[0].after)/float64(sums[1].after), "cached/uncached-after")
	b.ReportMetric(float64(sums[0].total)/float64(sums[1].total), "cached/uncached-total")
}

// TestBigAnswerCachedEqualsUncached guards the benchmark: the default cached path and the
// cacheSizeMiB 0 path give the same frames for the same upstream answer (a cold cache: the
// fetched answer, merged into the extent). The only difference allowed is the
// query-inspector stats the results cache adds to name how it served the query.
func TestBigAnswerCachedEqualsUncached(t *testing.T) {
	const series, points = 20, 300
	body := bigMatrixBody(series, points)
	upstream := bigUpstream(t, body, points)
	var got [2][]byte
	for i, size := range []int{-1, 0} {
		d, _ := bigDatasource(t, upstream, len(body), size)
		frames := bigFrames(t, d, series, points)
		d.Dispose()
		if want := map[int]rcache.Outcome{-1: rcache.Miss, 0: rcache.Bypass}[size]; !hasStat(frames, cacheStatName(want)) {
			t.Fatalf("cacheSizeMiB %d: the frames do not say the results cache's outcome was %s", size, want)
		}
		for _, f := range frames {
			if f.Meta == nil {
				continue
			}
			var kept []data.QueryStat
			for _, s := range f.Meta.Stats {
				if !strings.HasPrefix(s.DisplayName, cacheStatPrefix) && s.DisplayName != "Points fetched upstream" {
					kept = append(kept, s)
				}
			}
			f.Meta.Stats = kept
		}
		js, err := json.Marshal(frames)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = js
	}
	// Series 3's point 7 is "21.000000000756860": the JSON holds the values themselves.
	if !strings.Contains(string(got[1]), "21.00000000075686") {
		t.Fatalf("the uncached frames' JSON lacks series 3's point 7: %.600s", got[1])
	}
	if string(got[0]) != string(got[1]) {
		t.Fatalf("cached and uncached frames differ:\ncached   %.600s\nuncached %.600s", got[0], got[1])
	}
}

func hasStat(frames data.Frames, name string) bool {
	for _, f := range frames {
		if f.Meta == nil {
			continue
		}
		for _, s := range f.Meta.Stats {
			if s.DisplayName == name {
				return true
			}
		}
	}
	return false
}
