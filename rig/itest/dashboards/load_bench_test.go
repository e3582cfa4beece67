package dashboards_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
)

// upstreamMeter sits between the plugin and the emulator and records every call: its
// query, how long the emulator took, the answer's bytes, and whether it was throttling
// (429, or 422 saying so) or another 422 (the emulator's 20 s execution limit).
type upstreamMeter struct {
	mu    sync.Mutex
	calls []upstreamCall
}

type upstreamCall struct {
	query, path, kind     string
	form                  url.Values
	start                 time.Time
	took                  time.Duration
	bytes                 int64
	status                int
	throttled, timeout422 bool
	rangeQuery            bool
}

var throttleWords = regexp.MustCompile(`(?i)throttl|rate exceeded|too many`)

func (m *upstreamMeter) serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		form := formOf(r.URL, raw)
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		c := upstreamCall{query: form.Get("query"), path: r.URL.Path, kind: callKind(r.URL.Path), form: form, start: time.Now(), rangeQuery: form.Has("step")}
		next.ServeHTTP(rec, r)
		c.took, c.bytes, c.status = time.Since(c.start), rec.bytes, rec.status
		c.throttled = rec.status == http.StatusTooManyRequests || (rec.status == http.StatusUnprocessableEntity && throttleWords.Match(rec.head))
		c.timeout422 = rec.status == http.StatusUnprocessableEntity && !c.throttled
		m.mu.Lock()
		m.calls = append(m.calls, c)
		m.mu.Unlock()
	})
}

func (m *upstreamMeter) since(i int) []upstreamCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls[i:])
}

func (m *upstreamMeter) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	head   []byte
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.bytes += int64(len(p))
	if len(r.head) < 512 {
		r.head = append(r.head, p[:min(len(p), 512-len(r.head))]...)
	}
	return r.ResponseWriter.Write(p)
}

// panelLoad is one panel as the browser asks for it: all its targets in one request.
type panelLoad struct {
	key, kind string
	queries   []backend.DataQuery
}

// lookup is one template variable's label-values call.
type lookup struct{ label, match string }

type dashLoad struct {
	name    string
	panels  []panelLoad
	lookups []lookup
}

// dashboardLoads reads the generated dashboards into what a browser sends on load.
func dashboardLoads(tb testing.TB) []dashLoad {
	var out []dashLoad
	for file, d := range decodeAll(tb) {
		vars := defaultVars(d)
		dl := dashLoad{name: strings.TrimSuffix(file, ".json")}
		for _, v := range d.Templates.List {
			q, _ := builder.VariableQuery(v.Query)
			if m := labelValuesForm.FindStringSubmatch(q); v.Type == "query" && m != nil {
				dl.lookups = append(dl.lookups, lookup{label: m[2], match: interpolate(m[1], vars)})
			}
		}
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				continue
			}
			pl := panelLoad{key: fmt.Sprintf("%s/%d", dl.name, p.ID), kind: p.Type}
			for _, tg := range p.Targets {
				if issue11Target(tg) { // AWS API calls, not the PromQL load measured here
					continue
				}
				raw, _ := json.Marshal(interpolateTarget(tg, vars))
				qt, _ := tg["queryType"].(string)
				pl.queries = append(pl.queries, backend.DataQuery{RefID: tg["refId"].(string), QueryType: qt, JSON: raw,
					MaxDataPoints: 1000, Interval: 20 * time.Second})
			}
			if len(pl.queries) > 0 {
				dl.panels = append(dl.panels, pl)
			}
		}
		out = append(out, dl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// loadResult is what one dashboard load cost and how long its panels took.
type loadResult struct {
	calls                 []upstreamCall
	bytes                 int64
	throttled, timeout422 int
	samples               float64
	panelTime             map[string]time.Duration
	errors                []string
	keptFailures          int           // panels given a kept over-limit failure without a call
	started, panelsAt     time.Time     // the load's start; when its panels were sent
	took, offset          time.Duration // the whole load; its start after the cold load's
}

// load opens a dashboard as a browser does: the variables' lookups, then every panel at
// once, each panel its own request; the time range is the last 6 h up to at.
func load(ds *plugin.Datasource, m *upstreamMeter, dl dashLoad, at time.Time) loadResult {
	before := m.count()
	res := loadResult{panelTime: map[string]time.Duration{}, started: time.Now()}
	var mu sync.Mutex
	from, to := at.Add(-6*time.Hour), at
	for _, l := range dl.lookups {
		q := url.Values{"match[]": {l.match}, "start": {fmt.Sprint(from.Unix())}, "end": {fmt.Sprint(to.Unix())}}
		path := "api/v1/label/" + l.label + "/values"
		_ = ds.CallResource(context.Background(), &backend.CallResourceRequest{Path: path, Method: http.MethodGet, URL: "/" + path + "?" + q.Encode()},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
				if r.Status != http.StatusOK {
					mu.Lock()
					res.errors = append(res.errors, fmt.Sprintf("lookup %s: %d %s", l.label, r.Status, r.Body))
					mu.Unlock()
				}
				return nil
			}))
	}
	start := time.Now()
	res.panelsAt = start
	var wg sync.WaitGroup
	for _, p := range dl.panels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			qs := slices.Clone(p.queries)
			for i := range qs {
				qs[i].TimeRange = backend.TimeRange{From: from, To: to}
			}
			resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			res.panelTime[p.key] = took
			if err != nil {
				res.errors = append(res.errors, p.key+": "+err.Error())
				return
			}
			for ref, dr := range resp.Responses {
				if dr.Error != nil {
					res.errors = append(res.errors, fmt.Sprintf("%s/%s: %v", p.key, ref, dr.Error))
					if strings.Contains(dr.Error.Error(), "kept like a cached answer") {
						res.keptFailures++
					}
				}
				for _, f := range dr.Frames {
					if f.Meta == nil {
						continue
					}
					for _, s := range f.Meta.Stats {
						if s.DisplayName == "Samples scanned (estimate)" {
							res.samples += s.Value
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	res.took = time.Since(res.started)
	res.calls = m.since(before)
	for _, c := range res.calls {
		res.bytes += c.bytes
		if c.throttled {
			res.throttled++
		}
		if c.timeout422 {
			res.timeout422++
		}
	}
	return res
}

// BenchmarkDashboardRefresh loads all three dashboards against the 200 × 8 fleet (live,
// 6 h of history), then refreshes each 30 s, 60 s and 120 s later (real time, so the
// cache's one-step rule and re-fetch window behave as in Grafana), uncached and with a new
// data source's defaults, and reports per dashboard what a refresh costs against the same
// run's cold load. It also times each cold load's stat panels against their own upstream
// time in that load. Run with -benchtime 1x; it takes several minutes.
func BenchmarkDashboardRefresh(b *testing.B) {
	meter, newDS := startBenchStack(b)
	dashes := benchDashboards(b)
	// What Grafana sends: the interval raised to the data source's min interval (the
	// frontend sets the data source's interval from timeInterval), so the panels without a
	// min step of their own run at the 60 s step.
	for _, dl := range dashes {
		for _, p := range dl.panels {
			for k := range p.queries {
				p.queries[k].Interval = max(p.queries[k].Interval, benchPeriod)
			}
		}
	}
	offsets := []time.Duration{0, 30 * time.Second, 60 * time.Second, 120 * time.Second}
	labels := []string{"+30s", "+60s", "+120s"}
	b.ResetTimer()
	for range b.N {
		for _, mode := range benchModes {
			ds := newDS(mode.name, mode.extra)
			modeStart := meter.count()
			// Each dashboard's refreshes are timed from its own cold load; on a busy machine a
			// load can take longer than the gap, so the actual offsets are reported.
			results := make([][]loadResult, len(offsets)) // per offset, per dashboard
			coldAt := make([]time.Time, len(dashes))
			for step, offset := range offsets {
				for i, dl := range dashes {
					if step == 0 {
						coldAt[i] = time.Now()
					}
					time.Sleep(time.Until(coldAt[i].Add(offset)))
					r := load(ds, meter, dl, time.Now())
					r.offset = r.started.Sub(coldAt[i])
					results[step] = append(results[step], r)
				}
			}
			ds.Dispose()
			history := meter.since(modeStart)
			for i, dl := range dashes {
				cold := results[0][i]
				for _, rs := range results {
					for _, e := range rs[i].errors {
						fmt.Printf("%s %s: %s\n", mode.name, dl.name, e)
					}
				}
				for step, label := range labels {
					r := results[step+1][i]
					fmt.Printf("%-9s %-12s cold %3d calls %8.1f KiB %10.0f samples (%4.1fs) | %s at +%3.0fs (%4.1fs) %3d calls (%3.0f%%) %8.1f KiB (%5.1f%%) %10.0f samples (%5.1f%%) | throttled %d, 422 timeouts %d, 422s given again without a call %d\n",
						mode.name, dl.name, len(cold.calls), float64(cold.bytes)/1024, cold.samples, cold.took.Seconds(), label, r.offset.Seconds(), r.took.Seconds(),
						len(r.calls), pct(len(r.calls), len(cold.calls)), float64(r.bytes)/1024, pct(r.bytes, cold.bytes), r.samples, 100*r.samples/max(cold.samples, 1),
						cold.throttled+r.throttled, cold.timeout422+r.timeout422, r.keptFailures)
				}
				statPaint(mode.name, dl, cold)
				if mode.extra == nil { // with the cache: which calls a refresh still makes, and why
					for step, label := range labels {
						r := results[step+1][i]
						earlier := slices.DeleteFunc(slices.Clone(history), func(c upstreamCall) bool { return !c.start.Before(r.started) })
						printRefreshCalls(mode.name, dl.name, label, r, earlier, benchPeriod)
					}
				}
			}
		}
	}
}

func pct[T int | int64](a, b T) float64 { return 100 * float64(a) / float64(max(b, 1)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
