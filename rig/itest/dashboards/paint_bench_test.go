package dashboards_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	"github.com/inferscope/sagemaker-datasource/rig/dashload"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// benchStackOptions is the emulator of the load benches: the 200 × 8 fleet, live, 6 h of
// history.
var benchStackOptions = stack.Options{Fleet: fleet.Large(200, 8), History: 6 * time.Hour, Live: true}

// emulatorChildEnv makes the test binary serve the benches' emulator instead of running
// tests (see TestMain): the benches run the emulator in a child process at a lower CPU
// priority, so its query evaluation shares neither the plugin's Go scheduler nor, as far
// as the machine allows, its CPU (CloudWatch shares neither); BENCH_EMULATOR=inprocess
// runs it in the bench's own process instead.
const emulatorChildEnv = "INFERSCOPE_BENCH_EMULATOR_CHILD"

// emulatorInfo is what the child tells its parent, on one line after emulatorLine.
type emulatorInfo struct {
	URL              string
	JSONData, Secure map[string]string
}

const emulatorLine = "EMULATOR "

func TestMain(m *testing.M) {
	if os.Getenv(emulatorChildEnv) != "" {
		os.Exit(serveEmulator())
	}
	os.Exit(dstest.Main(m)) // closes the stacks the tests shared
}

// serveEmulator runs the benches' emulator until stdin closes (the parent ended).
func serveEmulator() int {
	st, err := stack.Start(context.Background(), benchStackOptions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "emulator:", err)
		return 1
	}
	defer st.Close()
	jd, secure := st.DataSourceSettings()
	line, _ := json.Marshal(emulatorInfo{URL: st.URL, JSONData: jd, Secure: secure})
	fmt.Println(emulatorLine + string(line))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startEmulator starts the benches' emulator in a child process of this binary, or with
// BENCH_EMULATOR=inprocess in this process, and returns its URL and data source settings.
func startEmulator(b *testing.B) (string, map[string]string, map[string]string) {
	if os.Getenv("BENCH_EMULATOR") == "inprocess" {
		st, err := stack.Start(context.Background(), benchStackOptions)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		jd, secure := st.DataSourceSettings()
		return st.URL, jd, secure
	}
	// At a lower CPU priority where nice exists: CloudWatch does not share the plugin's
	// CPU, and on a 2-core machine the emulator's evaluation would otherwise delay the
	// plugin's own work and count it as the plugin's.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if nice, err := exec.LookPath("nice"); err == nil {
		cmd = exec.Command(nice, "-n", "10", os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), emulatorChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), emulatorLine); ok {
			var info emulatorInfo
			if err := json.Unmarshal([]byte(rest), &info); err != nil {
				b.Fatal(err)
			}
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return info.URL, info.JSONData, info.Secure
		}
	}
	b.Fatalf("the emulator process ended before it served: %v", lines.Err())
	return "", nil, nil
}

// startBenchStack starts the emulator behind a metering proxy, and returns the meter and a
// constructor of plugin data sources pointed at the proxy (extra overrides the stack's
// jsonData). Everything stops with the benchmark.
func startBenchStack(b *testing.B) (*dashload.Meter, func(uid string, extra map[string]any) *plugin.Datasource) {
	emulatorURL, jsonData, secure := startEmulator(b)
	target, _ := url.Parse(emulatorURL)
	meter := &dashload.Meter{}
	front := httptest.NewServer(meter.Serve(httputil.NewSingleHostReverseProxy(target)))
	b.Cleanup(front.Close)
	return meter, func(uid string, extra map[string]any) *plugin.Datasource {
		jd := map[string]any{}
		for k, v := range jsonData {
			jd[k] = v
		}
		jd["endpoint"] = front.URL
		for k, v := range extra {
			jd[k] = v
		}
		raw, _ := json.Marshal(jd)
		inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: uid, JSONData: raw, DecryptedSecureJSONData: secure})
		if err != nil {
			b.Fatal(err)
		}
		return inst.(*plugin.Datasource)
	}
}

// benchDashboards is what a browser sends for each dashboard, narrowed by
// BENCH_DASHBOARDS=reliability,... so a loaded machine can still keep the refresh schedule
// for the dashboards that load in seconds.
func benchDashboards(b *testing.B) []dashload.Dashboard {
	dashes := dashload.Dashboards(b)
	if only := os.Getenv("BENCH_DASHBOARDS"); only != "" {
		dashes = slices.DeleteFunc(dashes, func(d dashload.Dashboard) bool { return !slices.Contains(strings.Split(only, ","), d.Name) })
	}
	return dashes
}

// benchModes are the data source settings the benches compare: no results cache, and a
// new data source's defaults.
var benchModes = []struct {
	name  string
	extra map[string]any
}{
	{"uncached", map[string]any{"cacheSizeMiB": 0}},
	{"cached", nil},
}

// BenchmarkStatFirstPaint times the stat panels of cold dashboard loads (all panels at
// once, a new data source each time, so nothing is cached) against their own upstream time
// in the same load, and splits the rest: before the request reached the proxy (the
// limiter's rate window and slots, signing), and after the proxy
// finished the answer (reading, decoding, building the response: CPU shared with the heavy
// answers). Baseline in the same run: each stat panel requested alone, right after its
// dashboard's load. BENCH_PAINT_LOADS (default 3) cold loads per dashboard and mode.
func BenchmarkStatFirstPaint(b *testing.B) {
	meter, newDS := startBenchStack(b)
	dashes := benchDashboards(b)
	loads := 3
	if n, err := strconv.Atoi(os.Getenv("BENCH_PAINT_LOADS")); err == nil && n > 0 {
		loads = n
	}
	b.ResetTimer()
	for range b.N {
		var all, alone []float64
		for i := range loads {
			for _, mode := range benchModes {
				for _, dl := range dashes {
					ds := newDS(fmt.Sprintf("%s-%d", mode.name, i), mode.extra)
					r := dashload.Load(ds, meter, dl, time.Now())
					for _, e := range r.Errors {
						fmt.Printf("%s %s: %s\n", mode.name, dl.Name, e)
					}
					all = append(all, statPaint(mode.name, dl, r)...)
					// The same stat panels one at a time, with nothing else loading.
					for _, p := range dl.Panels {
						if p.Kind != "stat" {
							continue
						}
						solo := dashload.Load(ds, meter, dashload.Dashboard{Name: dl.Name, Panels: []dashload.Panel{p}}, time.Now())
						alone = append(alone, statRatios(dashload.Dashboard{Panels: []dashload.Panel{p}}, solo, nil)...)
					}
					ds.Dispose()
				}
			}
		}
		b.ReportMetric(float64(within(all, 1.5))/float64(max(len(all), 1)), "share-within-1.5x")
		b.ReportMetric(median(all), "median-ratio")
		b.ReportMetric(median(alone), "alone-median-ratio")
		fmt.Printf("all loads: %d of %d stat panels within 1.5× (median %.2f×); alone: %d of %d (median %.2f×); load average %s\n",
			within(all, 1.5), len(all), median(all), within(alone, 1.5), len(alone), median(alone), loadAverage())
	}
}

// durationVar matches the backend's $__ variables in a target's expression; the plugin
// sends them interpolated.
var durationVar = regexp.MustCompile(`\\\$__[a-z_]+`)

// paintSplit is where one stat panel's time to first paint went, from the moment the
// panels were sent: queued before its request reached the proxy, upstream (the proxy's
// time for it), and after the proxy was done until the panel's response was built.
type paintSplit struct {
	key                     string
	queued, upstream, after time.Duration
	paint                   time.Duration
	sentAs, of              int // its request's place among the load's calls
}

func (s paintSplit) ratio() float64 { return float64(s.paint) / float64(s.upstream) }

// statRatios times each stat panel of a load against its own request's upstream time (its
// slowest query's when it has several) and reports the splits to each, if given.
func statRatios(dl dashload.Dashboard, r dashload.Result, each func(paintSplit)) []float64 {
	var ratios []float64
	for _, p := range dl.Panels {
		if p.Kind != "stat" {
			continue
		}
		s := paintSplit{key: p.Key, paint: r.PanelTime[p.Key], of: len(r.Calls)}
		for _, q := range p.Queries {
			var model struct {
				Expr string `json:"expr"`
			}
			_ = json.Unmarshal(q.JSON, &model)
			re, err := regexp.Compile("^" + durationVar.ReplaceAllString(regexp.QuoteMeta(model.Expr), `[0-9a-z.]+`) + "$")
			if err != nil {
				continue
			}
			for i, c := range r.Calls {
				if re.MatchString(c.Query) && c.Took > s.upstream {
					s.upstream, s.sentAs = c.Took, i+1
					s.queued = c.Start.Sub(r.PanelsAt)
					s.after = s.paint - s.queued - c.Took
				}
			}
		}
		if s.upstream == 0 { // served by the cache: no call to compare with
			continue
		}
		ratios = append(ratios, s.ratio())
		if each != nil {
			each(s)
		}
	}
	return ratios
}

// statPaint prints each stat panel's first paint in a load against its own upstream time,
// with the split, and a summary; it returns the ratios.
func statPaint(mode string, dl dashload.Dashboard, r dashload.Result) []float64 {
	var queued, after time.Duration
	ratios := statRatios(dl, r, func(s paintSplit) {
		queued += s.queued
		after += s.after
		fmt.Printf("stat %-8s %-16s upstream %7.1f ms, painted after %7.1f ms: %.2f× (queued %6.1f ms, sent %2d of %2d; after upstream %6.1f ms)\n",
			mode, s.key, ms(s.upstream), ms(s.paint), s.ratio(), ms(s.queued), s.sentAs, s.of, ms(s.after))
	})
	if os.Getenv("BENCH_PAINT_CALLS") != "" {
		printCalls(r)
	}
	if len(ratios) > 0 {
		fmt.Printf("%s %s stat panels: first paint / own upstream time: median %.2f×, max %.2f×, %d of %d within 1.5×; mean queued %.1f ms, mean after upstream %.1f ms; load %.1f s; load average %s\n",
			mode, dl.Name, median(ratios), slices.Max(ratios), within(ratios, 1.5), len(ratios),
			ms(queued)/float64(len(ratios)), ms(after)/float64(len(ratios)), r.Took.Seconds(), loadAverage())
	}
	return ratios
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func within(xs []float64, bound float64) int {
	n := 0
	for _, x := range xs {
		if x <= bound {
			n++
		}
	}
	return n
}

// loadAverage is the machine's 1-minute load average (the machine is shared; every number
// is reported with it).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// printCalls lists a load's calls in the order they reached the proxy (BENCH_PAINT_CALLS=1),
// to see what the stat panels waited behind.
func printCalls(r dashload.Result) {
	for i, c := range r.Calls {
		kind := "instant"
		if c.RangeQuery {
			kind = "range"
		}
		q := c.Query
		if len(q) > 70 {
			q = q[:70]
		}
		fmt.Printf("  call %2d at %7.1f ms took %7.1f ms %-7s %s\n", i+1, ms(c.Start.Sub(r.PanelsAt)), ms(c.Took), kind, q)
	}
}
