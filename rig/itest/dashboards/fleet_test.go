package dashboards_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/dashload"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// The dashboards' queries are run the way Grafana would run them: the panel's target JSON with
// the template variables interpolated, sent to our plugin's QueryData, which signs and sends
// them to the emulator serving a simulated fleet.

// series is one returned series: its labels and its first and last values.
type series struct {
	labels      data.Labels
	first, last float64
}

// result is what one target returned.
type result []series

// by maps a label's value to the series' last value.
func (r result) by(label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range r {
		out[s.labels[label]] = s.last
	}
	return out
}

func (r result) maxLast() float64 {
	m := math.Inf(-1)
	for _, s := range r {
		m = math.Max(m, s.last)
	}
	return m
}

// fleetRun is one stack with the plugin in front of it, queried with the interval and
// points a panel of that width would ask for.
type fleetRun struct {
	st       *stack.Stack
	ds       *plugin.Datasource
	from, to time.Time
	interval time.Duration
	points   int64
}

// Tests only read the stack, so one per scenario serves the whole package (dstest.Shared);
// each gets its own data source, so no cache carries over between them.
func startFleet(t *testing.T, scenario string) *fleetRun {
	t.Helper()
	st := dstest.Shared(t, stack.Options{Scenario: scenario, Seed: 42, History: 6 * time.Hour, End: stack.PinnedEnd})
	jsonData, secure := st.DataSourceSettings()
	// A new data source's settings: what it takes to reach the stack, nothing tuned (the
	// stack's provisioning also sets the min step; a user's new data source does not).
	jd, _ := json.Marshal(map[string]string{"authType": jsonData["authType"], "defaultRegion": jsonData["defaultRegion"], "endpoint": jsonData["endpoint"]})
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{
		UID: "fleet", JSONData: jd,
		DecryptedSecureJSONData: secure,
	})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	t.Cleanup(ds.Dispose)
	// The dashboards' default range: the last six hours.
	return &fleetRun{st: st, ds: ds, from: st.End.Add(-6 * time.Hour), to: st.End, interval: time.Minute, points: 360}
}

// fleets starts one stack per scenario on first use, each queried like the first (same
// interval and points).
type fleets struct {
	t    *testing.T
	runs map[string]*fleetRun
	like func(*fleetRun) // set up each new stack's query shape
}

func newFleets(t *testing.T, like func(*fleetRun)) *fleets {
	return &fleets{t: t, runs: map[string]*fleetRun{}, like: like}
}

func (fs *fleets) get(scenario string) *fleetRun {
	if fs.runs[scenario] == nil {
		fs.runs[scenario] = startFleet(fs.t, scenario)
		if fs.like != nil {
			fs.like(fs.runs[scenario])
		}
	}
	return fs.runs[scenario]
}

// frames sends one target (already interpolated) through QueryData and returns its frames.
func (f *fleetRun) frames(t *testing.T, target map[string]any) data.Frames {
	t.Helper()
	raw, err := json.Marshal(target)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := target["refId"].(string)
	qt, _ := target["queryType"].(string)
	resp, err := f.ds.QueryData(context.Background(), &backend.QueryDataRequest{
		PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "fleet"}},
		Queries: []backend.DataQuery{{
			RefID: ref, QueryType: qt, JSON: raw, MaxDataPoints: f.points, Interval: f.interval,
			TimeRange: backend.TimeRange{From: f.from, To: f.to},
		}},
	})
	if err != nil {
		t.Fatalf("QueryData: %v", err)
	}
	dr := resp.Responses[ref]
	if dr.Error != nil {
		t.Fatalf("target %s: %v\n%s", ref, dr.Error, raw)
	}
	return dr.Frames
}

// query sends one target (already interpolated) through QueryData.
func (f *fleetRun) query(t *testing.T, target map[string]any) result {
	t.Helper()
	qt, _ := target["queryType"].(string)
	frames := f.frames(t, target)
	var out result
	for _, fr := range frames {
		rows, _ := fr.RowLen()
		if qt == models.QueryTypeDiagnosis {
			// A finding per row; an empty table still proves the query path answered.
			out = append(out, series{labels: data.Labels{"rows": fmt.Sprint(rows)}})
			continue
		}
		if qt == models.QueryTypeChanges { // text columns only: a series per change
			for i := range rows {
				out = append(out, series{labels: data.Labels{"row": fmt.Sprint(i)}})
			}
			continue
		}
		for _, fd := range fr.Fields {
			if !fd.Type().Numeric() || rows == 0 {
				continue
			}
			s := series{labels: fd.Labels, first: math.NaN(), last: math.NaN()}
			for i := 0; i < rows; i++ {
				v, ok := fd.ConcreteAt(i)
				if !ok {
					continue
				}
				x, err := fd.FloatAt(i)
				if err != nil || v == nil || math.IsNaN(x) {
					continue
				}
				if math.IsNaN(s.first) {
					s.first = x
				}
				s.last = x
			}
			if !math.IsNaN(s.last) {
				out = append(out, s)
			}
		}
	}
	return out
}

// dashTarget is one target of one panel with its dashboard's default variables.
type dashTarget struct {
	target map[string]any
	vars   map[string]string
}

// allTargets indexes every target as "dashboard/panelID" → refId, except those of the issue
// 11 query types: TestIssue11Panels runs them and reports what this tree lacks to answer them.
func allTargets(t *testing.T) map[string]map[string]dashTarget {
	return targetsWhere(t, func(tg map[string]any) bool { return !dashload.AWSTarget(tg) })
}

// targetsWhere indexes the targets that keep returns true for.
func targetsWhere(t *testing.T, keep func(map[string]any) bool) map[string]map[string]dashTarget {
	t.Helper()
	out := map[string]map[string]dashTarget{}
	for file, d := range dashload.Generated(t) {
		for _, p := range d.Panels {
			key := fmt.Sprintf("%s/%d", strings.TrimSuffix(file, ".json"), p.ID)
			for _, tg := range p.Targets {
				if !keep(tg) {
					continue
				}
				if out[key] == nil {
					out[key] = map[string]dashTarget{}
				}
				out[key][tg["refId"].(string)] = dashTarget{target: tg, vars: dashload.DefaultVars(d)}
			}
		}
	}
	return out
}

// run answers one target with the default variables and the given overrides.
func (f *fleetRun) run(t *testing.T, dt dashTarget, override map[string]string) result {
	t.Helper()
	return f.query(t, dt.with(override))
}

// with is the target interpolated with its dashboard's default variables and the overrides.
func (dt dashTarget) with(override map[string]string) map[string]any {
	vars := map[string]string{}
	for k, v := range dt.vars {
		vars[k] = v
	}
	for k, v := range override {
		vars[k] = v
	}
	return dashload.InterpolateTarget(dt.target, vars)
}

// fedBy names the scenario that feeds a panel whose healthy answer is "nothing happened".
var fedBy = map[string]string{
	"reliability/4":  "ice-exhaustion",
	"reliability/14": "ice-exhaustion",
	"reliability/25": "ice-exhaustion",
	"reliability/27": "bad-deploy", // the changes table: a healthy fleet has none
	"capacity/40":    "gpu-degrade",
	"capacity/44/A":  "gpu-degrade", // throttled GPUs; the SM clock (B) has data when healthy
}

// emptyTargets are targets that may return nothing in the scenario that feeds their panel,
// each with the reason.
var emptyTargets = map[string]string{
	"capacity/45/C":   "NVLink: the default fleet's A10G GPUs have none, and DCGM exports nothing for them",
	"performance/8/D": "mid-stream errors: the simulator does not break streams",
	"reliability/2/D": "autoscaling did not fire: only in scaling-not-firing (asserted in TestScenarioPanels)",
}

// Every panel returns series through the plugin with a new data source's default settings,
// in the scenario that feeds it, at the interval a wide panel asks for: Grafana sends 20 s at
// 6 h over 1080 points, so a min step assumed at 15 s would give rate() windows of 1m over
// one-minute data and empty panels.
func TestEveryPanelReturnsSeriesWithDefaultSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with simulated fleets")
	}
	targets := allTargets(t)
	runs := newFleets(t, func(f *fleetRun) { f.interval, f.points = 20*time.Second, 1080 })
	var keys []string
	for k := range targets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for ref, dt := range targets[k] {
			scenario := cmp.Or(fedBy[k+"/"+ref], fedBy[k], "healthy")
			r := runs.get(scenario).run(t, dt, nil)
			if _, exempt := emptyTargets[k+"/"+ref]; len(r) == 0 && !exempt {
				t.Errorf("%s target %s returned no series in %s with default settings", k, ref, scenario)
			}
			if k == "reliability/2" && ref == "D" && len(r) != 0 {
				t.Errorf("healthy fleet shows 'autoscaling did not fire': %v", r)
			}
		}
	}
}

// singleModelEndpoint is an endpoint of the default fleet without inference components.
func singleModelEndpoint(t *testing.T) string {
	for _, ep := range fleet.Default().Endpoints {
		if !ep.IsIC() {
			return ep.Name
		}
	}
	t.Fatal("the default fleet has no single-model endpoint")
	return ""
}

// On a single-model endpoint the IC panels answer with no series (their noValue text shows),
// never an error, while the same panels have data on the IC endpoint.
func TestICPanelsEmptyOnSingleModelEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	f := startFleet(t, "healthy")
	targets := allTargets(t)
	icPanels := []string{"performance/25", "performance/29", "performance/30"}
	for _, p := range icPanels {
		for ref, dt := range targets[p] {
			if r := f.run(t, dt, map[string]string{dashref.VarEndpoint: singleModelEndpoint(t)}); len(r) != 0 {
				t.Errorf("%s/%s on a single-model endpoint: %v, want no series", p, ref, r)
			}
			if r := f.run(t, dt, map[string]string{dashref.VarEndpoint: firstICEndpoint(t)}); len(r) == 0 {
				t.Errorf("%s/%s on the IC endpoint: no series", p, ref)
			}
		}
	}
}

// Instances whose engine emits no token metrics (DJL) are rows of the instance table with empty
// token columns: the GPU column lists them, the token columns do not (Grafana's merge leaves
// the cells empty, not zero).
func TestInstanceTableLeavesTokenCellsEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	f := startFleet(t, "healthy")
	table := allTargets(t)["performance/2"]
	hosts := f.run(t, table["A"], nil).by(sc.LabelHostID)
	for _, ref := range []string{"B", "C", "E"} {
		withTokens := f.run(t, table[ref], nil).by(sc.LabelHostID)
		if len(withTokens) == 0 || len(withTokens) >= len(hosts) {
			t.Errorf("column %s has %d hosts of %d: want some, but not the DJL-only hosts", ref, len(withTokens), len(hosts))
		}
		for h := range withTokens {
			if _, ok := hosts[h]; !ok {
				t.Errorf("column %s has host %s that the GPU column lacks: its row would not merge", ref, h)
			}
		}
	}
}

// firstICEndpoint is the endpoint the IC scenarios of the default fleet hit.
func firstICEndpoint(t *testing.T) string {
	for _, ep := range fleet.Default().Endpoints {
		if ep.IsIC() {
			return ep.Name
		}
	}
	t.Fatal("the default fleet has no IC endpoint")
	return ""
}

// Each scenario must show in the panel meant to reveal it, and not in the healthy fleet.
func TestScenarioPanels(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet per scenario")
	}
	icEP := map[string]string{dashref.VarEndpoint: firstICEndpoint(t)}
	cases := []struct {
		scenario, panel, ref string
		vars                 map[string]string
		shows                func(result) bool // true when the incident is visible
	}{
		{"az-imbalance", "performance/5", "A", icEP, func(r result) bool {
			// Zero traffic in one AZ while the others carry load.
			zero, loaded := 0, 0
			for _, v := range r.by(sc.LabelAZ) {
				if v == 0 {
					zero++
				} else if v > 1 {
					loaded++
				}
			}
			return zero == 1 && loaded >= 1
		}},
		{"az-imbalance", "reliability/22", "A", icEP, func(r result) bool {
			zero := 0
			for _, v := range r.by(sc.LabelAZ) {
				if v == 0 {
					zero++
				}
			}
			return zero == 1 && len(r) > 1
		}},
		{"kv-saturation", "performance/7", "A", nil, func(r result) bool { return r.maxLast() >= 0.9 }},
		{"engine-queueing", "performance/3", "A", nil, func(r result) bool { return r.by(sc.LabelFramework)["sglang"] > 5 }},
		{"kv-saturation", "performance/1", "A", nil, func(r result) bool { return r.maxLast() == 2 }},
		{"engine-queueing", "performance/27", "B", nil, func(r result) bool { return r.by(sc.LabelFramework)["sglang"] >= 10 }},
		// Healthy 5XX stays under 0.06/s at any hour; the crash fails the dead copy's share.
		{"model-crash", "performance/8", "B", nil, func(r result) bool { return r.maxLast() > 0.2 }},
		{"scaling-not-firing", "reliability/2", "D", nil, func(r result) bool { return len(r) > 0 }},
		{"slow-cold-start", "reliability/3", "A", nil, func(r result) bool { return r.maxLast() > 200 }},
		// GPU health row: one GPU overheats, throttles and reports XID 48 with an uncorrectable ECC error.
		{"gpu-degrade", "capacity/41", "A", nil, func(r result) bool { return r.maxLast() >= 87 }},
		{"gpu-degrade", "capacity/44", "A", nil, func(r result) bool { return r.maxLast() >= 1 }},
		{"gpu-degrade", "capacity/40", "A", nil, func(r result) bool { return len(r) == 1 && r.maxLast() == 48 }},
		{"gpu-degrade", "capacity/40", "B", nil, func(r result) bool { return len(r) == 1 && r.maxLast() >= 1 }},
		// Per model: the saturated model's TTFT P99 over the range, and its prefix-cache hit rate.
		{"kv-saturation", "performance/31", "C", nil, func(r result) bool { return r.by(sc.LabelModelName)["meta-llama/Llama-3.1-8B-Instruct"] > 5 }},
		{"kv-saturation", "performance/32", "A", nil, func(r result) bool { return r.by(sc.LabelModelName)["meta-llama/Llama-3.1-8B-Instruct"] < 0.3 }},
		{"ice-exhaustion", "reliability/4", "B", nil, func(r result) bool {
			// Regional exhaustion: one instance type failing in every AZ of the fleet.
			azs := map[string]map[string]bool{}
			for _, s := range r {
				typ := s.labels["aws.sagemaker.instance_type"]
				if azs[typ] == nil {
					azs[typ] = map[string]bool{}
				}
				azs[typ][s.labels["aws.sagemaker.availability_zone"]] = true
			}
			for _, set := range azs {
				if len(set) == len(fleet.Default().AZs()) {
					return true
				}
			}
			return false
		}},
	}
	targets := allTargets(t)
	runs := newFleets(t, nil)
	for _, c := range cases {
		dt, ok := targets[c.panel][c.ref]
		if !ok {
			t.Fatalf("no target %s/%s", c.panel, c.ref)
		}
		runs.get(c.scenario) // started here: a stack that fails to start fails the parent test
		runs.get("healthy")
		t.Run(c.scenario+" "+c.panel, func(t *testing.T) {
			if got := runs.get(c.scenario).run(t, dt, c.vars); !c.shows(got) {
				t.Errorf("%s does not show %s: %v", c.panel, c.scenario, got)
			}
			if base := runs.get("healthy").run(t, dt, c.vars); c.shows(base) {
				t.Errorf("%s shows %s on the healthy fleet too: %v", c.panel, c.scenario, base)
			}
		})
	}
}

// The latency-breakdown reading rule: when the engine queues, TTFT climbs while model and
// overhead latency stay where they were; only the streaming view's first chunk climbs with it.
func TestEngineQueueingReadingRule(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	targets := allTargets(t)
	healthy, queueing := startFleet(t, "healthy"), startFleet(t, "engine-queueing")
	ttft := targets["performance/3"]["A"]
	if h, q := healthy.run(t, ttft, nil).by(sc.LabelFramework)[sc.FrameworkSGLang], queueing.run(t, ttft, nil).by(sc.LabelFramework)[sc.FrameworkSGLang]; !(q > 10*h) {
		t.Errorf("SGLang TTFT %g when queueing vs %g healthy: want a tenfold rise", q, h)
	}
	// Invocation view (4): model and overhead unchanged. Streaming view (22): the first chunk
	// waits in the engine queue, so its model part rises with TTFT while its overhead does not.
	for _, c := range []struct{ panel, ref string }{{"4", "A"}, {"4", "B"}, {"22", "B"}} {
		part := targets["performance/"+c.panel][c.ref]
		h, q := healthy.run(t, part, nil).maxLast(), queueing.run(t, part, nil).maxLast()
		if !(q < 1.5*h) || math.IsInf(h, 0) {
			t.Errorf("latency breakdown %s/%s: %g when queueing vs %g healthy, want it about unchanged", c.panel, c.ref, q, h)
		}
	}
	firstChunk := targets["performance/22"]["A"]
	if h, q := healthy.run(t, firstChunk, nil).maxLast(), queueing.run(t, firstChunk, nil).maxLast(); !(q > 10*h) || math.IsInf(h, 0) {
		t.Errorf("streaming first-chunk model latency %g ms when queueing vs %g healthy: want a tenfold rise", q, h)
	}
}

// A GPU memory leak shows as one instance's used framebuffer creeping up. Copies being added
// also raise it (in steps, at hours that depend on the diurnal load), so the leak is judged
// against the same deterministic fleet without it.
func TestGPUMemoryLeakShows(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	used := allTargets(t)["capacity/22"]["A"]
	growth := func(f *fleetRun) map[string]float64 {
		out := map[string]float64{}
		for _, s := range f.run(t, used, nil) {
			if s.first > 0 {
				out[s.labels[sc.LabelHostID]] = s.last / s.first
			}
		}
		return out
	}
	healthy, leak := growth(startFleet(t, "healthy")), growth(startFleet(t, "gpu-memory-leak"))
	var leaking []string
	for h, g := range leak {
		if base, ok := healthy[h]; ok && g > 1.05*base {
			leaking = append(leaking, h)
		}
	}
	if len(leaking) != 1 {
		t.Fatalf("instances whose GPU memory grew 5%% beyond the healthy fleet: %v, want exactly one (healthy %v, leak %v)", leaking, healthy, leak)
	}
}

// "Filter by this instance" and the AZ filter narrow the per-instance panels to the selection.
func TestFiltersNarrowPanels(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	f := startFleet(t, "healthy")
	targets := allTargets(t)
	gpus := f.run(t, targets["performance/2"]["A"], nil)
	if len(gpus) < 2 {
		t.Fatalf("instance table has %d rows", len(gpus))
	}
	one, az := gpus[0].labels[sc.LabelHostID], gpus[0].labels[sc.LabelAZ]
	cases := []struct {
		name, panel, ref, label, want string
		vars                          map[string]string
	}{
		{"instance table", "performance/2", "A", sc.LabelHostID, one, map[string]string{dashref.VarInstance: one}},
		{"requests per instance", "performance/24", "A", sc.DimInstanceID, one, map[string]string{dashref.VarInstance: one}},
		{"requests per instance in one AZ", "performance/24", "A", "", "", map[string]string{dashref.VarAZ: az}},
		{"headroom table", "capacity/3", "A", sc.LabelAZ, az, map[string]string{dashref.VarAZ: az}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all := f.run(t, targets[c.panel][c.ref], nil)
			got := f.run(t, targets[c.panel][c.ref], c.vars)
			if len(got) == 0 || len(got) >= len(all) {
				t.Fatalf("%d series with the filter, %d without: want fewer, not none", len(got), len(all))
			}
			for _, s := range got {
				if c.label != "" && s.labels[c.label] != c.want {
					t.Errorf("series %v outside the filter %s=%s", s.labels, c.label, c.want)
				}
			}
		})
	}
}

// fingerprint is a panel's answer in a comparable form: every target's series with their
// labels and first and last values.
func (f *fleetRun) fingerprint(t *testing.T, targets map[string]dashTarget, vars map[string]string) string {
	var refs []string
	for ref := range targets {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	var out []string
	for _, ref := range refs {
		for _, s := range f.run(t, targets[ref], vars) {
			out = append(out, fmt.Sprintf("%s %v %g %g", ref, s.labels, s.first, s.last))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// sameAtEveryScope are panels (or panel/variable pairs) whose value on the default fleet does
// not change with the scope, with the reason; their queries use every filter
// (TestEveryPanelFollowsEveryFilter).
var sameAtEveryScope = map[string]string{
	"performance/14": "AZ skew: every endpoint is spread evenly over its AZs, so the skew is 0 at any scope",
	"reliability/12": "AZ skew: as performance/14",
	// panel/variable: the one filter the panel's value does not move with.
	"performance/34/az": "queue time percentile: every copy of a model takes the same share of load, so each AZ's distribution is the whole's",
}

// Setting a filter variable changes what every panel shows (the filter reaches the data, not
// only the query text), unless the panel says it cannot follow that filter.
func TestEveryFilterNarrowsEveryPanel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	f := startFleet(t, "healthy")
	f.points = 36 // coarse steps: the answer changes or it does not
	targets := allTargets(t)
	// One value per filter, each selecting part of the default fleet.
	ic := "chat-qwen-7b"
	hosts := f.run(t, targets["performance/2"]["A"], map[string]string{dashref.VarIC: ic}).by(sc.LabelHostID)
	var instance string
	for h := range hosts {
		instance = max(instance, h)
	}
	values := map[string]string{
		dashref.VarEndpoint:  singleModelEndpoint(t),
		dashref.VarIC:        ic,
		dashref.VarAZ:        fleet.Default().AZs()[1],
		dashref.VarInstance:  instance,
		dashref.VarFramework: sc.FrameworkSGLang,
		dashref.VarModel:     "Qwen/Qwen2.5-7B-Instruct",
	}
	ignored := map[string]map[string]bool{}
	for file, d := range dashload.Generated(t) {
		for _, p := range d.Panels {
			ignored[fmt.Sprintf("%s/%d", strings.TrimSuffix(file, ".json"), p.ID)] = builder.IgnoredFilters(p.Description)
		}
	}
	// Panels whose healthy answer is the same at every scope are judged in a scenario that
	// gives them something to narrow.
	narrowIn := map[string]string{
		"performance/9":  "kv-saturation",   // no finding when healthy
		"performance/28": "kv-saturation",   // no preemption when healthy
		"performance/34": "engine-queueing", // queue time near zero everywhere when healthy
	}
	runs := newFleets(t, func(g *fleetRun) { g.points = f.points })
	runs.runs["healthy"] = f
	var keys []string
	for k := range targets {
		_, fed := fedBy[k] // empty when healthy: nothing to narrow
		_, balanced := sameAtEveryScope[k]
		if !fed && !balanced {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		scenario := cmp.Or(narrowIn[k], "healthy")
		f := runs.get(scenario)
		all := f.fingerprint(t, targets[k], nil)
		for _, v := range dashref.FilterVars {
			if _, same := sameAtEveryScope[k+"/"+v]; same || ignored[k][v] {
				continue
			}
			if f.fingerprint(t, targets[k], map[string]string{v: values[v]}) == all {
				t.Errorf("%s: setting %s=%s changes nothing", k, v, values[v])
			}
		}
	}
}

// With OTel enrichment off, every query of a vended metric comes back empty, so its panel shows
// its "no vended metrics" state instead of zeros (the per-AZ traffic zeros included), while
// the native panels keep their data.
func TestEnrichmentOffShowsNoZeros(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	f := startFleet(t, "enrichment-off")
	targets := allTargets(t)
	vended := 0
	for k, refs := range targets {
		for ref, dt := range refs {
			expr, _ := dt.target["expr"].(string)
			if !builder.ReadsVended(expr) {
				continue
			}
			vended++
			if r := f.run(t, dt, nil); len(r) != 0 {
				t.Errorf("%s/%s reads vended metrics yet returned %d series with enrichment off: %v", k, ref, len(r), r)
			}
		}
	}
	if vended < 10 {
		t.Fatalf("only %d targets read vended metrics", vended)
	}
	if r := f.run(t, targets["performance/7"]["A"], nil); len(r) == 0 {
		t.Error("the KV cache panel (engine series) lost its data too")
	}
}

// "Will it fit?": the calculator's answer follows its inputs the way placement works: one GPU
// per copy fits on every empty GPU, a copy larger than any GPU fits nowhere, and a 2-GPU copy
// needs two empty GPUs on one instance. The per-AZ tiles add up to the total.
func TestWillItFit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	f := startFleet(t, "healthy")
	targets := allTargets(t)
	total := func(gpus, gib string) float64 {
		r := f.run(t, targets["capacity/48"]["A"], map[string]string{dashref.VarFitGPUs: gpus, dashref.VarFitMemGiB: gib})
		if len(r) != 1 {
			t.Fatalf("total for %s GPUs, %s GiB: %v", gpus, gib, r)
		}
		return r[0].last
	}
	free := f.run(t, targets["capacity/12"]["A"], nil) // GPUs holding no model
	if len(free) != 1 || free[0].last < 2 {
		t.Fatalf("the healthy fleet needs empty GPUs for this test: %v", free)
	}
	if got := total("1", "16"); got != free[0].last {
		t.Errorf("1 GPU, 16 GiB: %g copies fit, want one per empty 22.5 GiB A10G (%g)", got, free[0].last)
	}
	if got := total("1", "100"); got != 0 {
		t.Errorf("1 GPU, 100 GiB: %g copies fit on 22.5 GiB GPUs", got)
	}
	usable := f.run(t, targets["capacity/47"]["A"], map[string]string{dashref.VarFitGPUs: "1", dashref.VarFitMemGiB: "16"})
	want2 := 0.0
	for _, s := range usable {
		want2 += math.Floor(s.last / 2)
	}
	if got := total("2", "32"); got != want2 {
		t.Errorf("2 GPUs, 32 GiB: %g copies fit, want %g (pairs of empty GPUs per instance: %v)", got, want2, usable)
	}
	perAZ := f.run(t, targets["capacity/49"]["A"], nil)
	sum := 0.0
	for _, s := range perAZ {
		sum += s.last
	}
	if sum != total("1", "16") || len(perAZ) < 2 {
		t.Errorf("per-AZ copies %v do not add up to the total %g", perAZ, total("1", "16"))
	}
}
