package alerts_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// Time to page: per incident and fleet shape, the rules evaluated every minute with the
// state machine, and the first minute after the incident's signal at which a rule that names
// the cause is Firing on the incident's resource.

// pageBudget is the longest a step incident may take to page, with samples arriving up to
// budgetDelay after their minute.
const (
	pageBudget  = 5 * time.Minute
	budgetDelay = time.Minute
)

// arrivalDelays: a sample for minute m is readable at m+d (stack.SetArrived). The emulator's
// live mode publishes 34 s after the minute; CloudWatch's vended metrics often arrive later.
var arrivalDelays = []time.Duration{0, time.Minute, 2 * time.Minute}

// delaysOf says at which arrival delays the i-th case plays on the shape-th shape (0: the
// default fleet). Every case plays at budgetDelay, the contract. The other delays cost as
// much each, so by default each scenario plays them on one shape, rotating so that every
// shape meets every delay across the scenarios; INFERSCOPE_DELAYS=all plays the full grid
// (docs/alerting.md's table).
func delaysOf(i, shape, shapes int, all bool) []time.Duration {
	var out []time.Duration
	for j, d := range arrivalDelays {
		if all || d == budgetDelay || (i+j)%shapes == shape {
			out = append(out, d)
		}
	}
	return out
}

// pageCase is how one scenario pages: the rules that name its cause and when its signal
// starts, from the incident's start S (simulator.IncidentLead before the history's end).
type pageCase struct {
	scenario string
	rules    []string
	signal   time.Duration
	// whole: the incident spans the whole history (no start to measure from); the test
	// reports the first page and the state the fleet was in then.
	whole bool
	// also: rules the incident's consequences may fire on its resources, later.
	also []string
}

var pageCases = []pageCase{
	{scenario: "kv-saturation", rules: []string{"inferscope-kv-saturation"}},
	{scenario: "engine-queueing", rules: []string{"inferscope-engine-queueing"}},
	// The container dies at two thirds of the lead before the end.
	{scenario: "model-crash", rules: []string{"inferscope-vram-drop", "inferscope-5xx-rate"}, signal: simulator.IncidentLead / 3},
	// The first forced re-provisioning, 80 of the 90 minutes before the end.
	{scenario: "slow-cold-start", rules: []string{"inferscope-slow-cold-start"}, signal: simulator.IncidentLead / 9},
	{scenario: "az-imbalance", rules: []string{"inferscope-az-no-traffic"}},
	{scenario: "scaling-not-firing", rules: []string{"inferscope-scaling-not-firing"}},
	// The first corrected ECC errors, five minutes into the GPU's heating.
	// The throttled copy serves slower, so its IC's load per copy can double; an IC at its
	// most copies then cannot scale out, which the scaling rule rightly reports.
	{scenario: "gpu-degrade", rules: []string{"inferscope-gpu-ecc-rising", "inferscope-gpu-uncorrectable-ecc", "inferscope-gpu-hot"}, signal: 5 * time.Minute,
		also: []string{"inferscope-scaling-not-firing"}},
	// The first launch that fails for capacity.
	{scenario: "ice-exhaustion", rules: []string{"inferscope-ice"}},
	{scenario: "enrichment-off", rules: []string{"inferscope-enrichment-off"}, whole: true},
	{scenario: "gpu-memory-leak", rules: []string{"inferscope-gpu-memory-growth"}, whole: true},
	{scenario: "healthy"},
}

// Fleet shapes: the default fleet and generated fleets (fleet.Generate) with fixed seeds.
var pageSeeds = []uint64{11, 23, 37}

const (
	pageHistory  = 3 * time.Hour // the windows' look-back before S-10m: an hour and its offset
	pageBefore   = 10 * time.Minute
	pageAfter    = 40 * time.Minute
	pageMaxHosts = 12
)

// shape is a fleet to play a scenario on: the default fleet (seed 0) or a generated one.
type shape struct {
	name  string // the table's column
	about string // the fleet in a few words
	fleet *fleet.Fleet
	seed  int64
	end   time.Time
}

// pageShape draws the fleet of seed for scenario: generated fleets that cannot play the
// scenario (no IC, one AZ, …) are drawn again, so each seed gives one fleet per scenario.
func pageShape(t testing.TB, seed uint64, scenario string) shape {
	if seed == 0 {
		return shape{name: "default", about: "default fleet", fleet: fleet.Default(), seed: 42, end: stack.PinnedEnd}
	}
	r := rand.New(rand.NewPCG(seed, 0xa1e7))
	for attempt := 0; attempt < 200; attempt++ {
		f, err := fleet.Generate(r, pageMaxHosts)
		if err != nil {
			continue
		}
		if _, err := simulator.New(f, scenario, int64(seed)); err != nil {
			continue
		}
		hosts := 0
		for _, e := range f.Endpoints {
			hosts += e.InstanceCount()
		}
		// Any hour of the day, so the diurnal load differs between shapes.
		end := stack.PinnedEnd.Add(-time.Duration(seed%24) * time.Hour)
		return shape{name: fmt.Sprintf("seed %d", seed), about: fmt.Sprintf("%d endpoints, %d instances in %s", len(f.Endpoints), hosts, f.Region), fleet: f, seed: int64(seed), end: end}
	}
	t.Fatalf("seed %d: no generated fleet plays %s", seed, scenario)
	return shape{}
}

// pageResult is one case's measurement.
type pageResult struct {
	shape, about string
	scenario     string
	delay        time.Duration
	page         time.Duration // from the signal to the first firing on the target; -1: never
	note         string
}

// onTarget says whether an alert's resource labels name the incident's resource: every
// resource label the alert has must be the incident's (labels it lacks are not judged).
func onTarget(l map[string]string, in simulator.Incident, account string) bool {
	want := map[string]string{"endpoint": in.Endpoint, "account": account}
	switch in.Level {
	case "inference-component":
		want["inference_component"] = in.Name
	case "instance":
		want["instance"] = in.Name
	case "availability-zone":
		want["az"] = in.Name
	case "instance-type":
		want["instance_type"] = in.Name
		delete(want, "endpoint") // capacity is the region's, not the endpoint's
	}
	for k, v := range want {
		if got, ok := l[k]; ok && v != "" && got != v {
			return false
		}
	}
	return true
}

// allowed: the rules that may fire in a scenario, on its resource (its page rules and the
// intended matrix's, e.g. the SLO burn rates a latency incident spends).
func allowed(c pageCase) map[string]bool {
	out := map[string]bool{}
	for _, r := range append(slices.Clone(c.rules), c.also...) {
		out[r] = true
	}
	for uid, byScenario := range intended {
		if _, ok := byScenario[c.scenario]; ok {
			out[uid] = true
		}
	}
	return out
}

// TestTimeToPage measures, per scenario and fleet shape, how long after its signal a rule
// naming the incident fires on its resource, evaluating every rule every minute from S-10m to
// S+40m with the pending periods; nothing may fire before the signal, elsewhere or on a
// healthy fleet. docs/alerting.md ("Time to page") shows the table.
func TestTimeToPage(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: backfills every scenario on four fleet shapes")
	}
	t.Parallel()
	rules := loadRules(t)
	all := false
	switch v := os.Getenv("INFERSCOPE_DELAYS"); v {
	case "":
	case "all":
		all = true
	default:
		t.Fatalf("INFERSCOPE_DELAYS=%q: the only value is all (every case at every arrival delay); unset it for the default subset", v)
	}
	var (
		mu      sync.Mutex
		results []pageResult
	)
	t.Run("cases", func(t *testing.T) {
		seeds := append([]uint64{0}, pageSeeds...)
		for k, seed := range seeds {
			for i, c := range pageCases {
				t.Run(fmt.Sprintf("%s/%d", c.scenario, seed), func(t *testing.T) {
					t.Parallel()
					res := measurePage(t, rules, c, pageShape(t, seed, c.scenario), delaysOf(i, k, len(seeds), all))
					mu.Lock()
					results = append(results, res...)
					mu.Unlock()
				})
			}
		}
	})
	for _, d := range arrivalDelays {
		var at []pageResult
		for _, r := range results {
			if r.delay == d {
				at = append(at, r)
			}
		}
		t.Logf("time to page with samples arriving %s after their minute (every rule every minute from S-%s to S+%s, with `for`; -: not played at this delay without INFERSCOPE_DELAYS=all):\n%s", d, pageBefore, pageAfter, pageTable(at))
	}
}

// measurePage plays one case at the given arrival delays on one backfilled stack and returns
// its times to page; it fails the test on a page that is late, early, misplaced or not one of
// the scenario's rules, and on a rule returning a non-finite value.
func measurePage(t *testing.T, rules []rule, c pageCase, sh shape, delays []time.Duration) []pageResult {
	st := startStack(t, stack.Options{Scenario: c.scenario, Seed: sh.seed, History: pageHistory, End: sh.end, Fleet: sh.fleet})
	var out []pageResult
	for _, d := range delays {
		// A data source per delay: nothing cached under another delay is reused.
		out = append(out, measurePageAt(t, rules, c, sh, st, newDatasource(t, st, nil), d))
	}
	return out
}

// measurePageAt sweeps the case's minutes with samples arriving d after their minute.
func measurePageAt(t *testing.T, rules []rule, c pageCase, sh shape, st *stack.Stack, ds backend.QueryDataHandler, d time.Duration) pageResult {
	res := pageResult{shape: sh.name, about: sh.about, scenario: c.scenario, delay: d, page: -1}
	history := pageHistory
	defer st.SetArrived(time.Time{})
	start := st.End.Add(-simulator.IncidentLead)
	signal := start.Add(c.signal)
	from, to := start.Add(-pageBefore), start.Add(pageAfter)
	if c.whole {
		// From the first minute the rules' windows have data, to the end.
		from, to = st.End.Add(-history).Add(10*time.Minute), st.End
		signal = from
	}
	ok := allowed(c)
	states := make([]*ruleState, len(rules))
	for i, r := range rules {
		states[i] = newRuleState(r)
	}
	pages := map[string]bool{}
	for _, r := range c.rules {
		pages[r] = true
	}
	ctx := context.Background()
	reported := map[string]bool{}
	for at := from; !at.After(to); at = at.Add(time.Minute) {
		st.SetArrived(at.Add(-d))
		if err := evaluateAll(ctx, ds, states, at); err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			for _, in := range s.instances {
				if !in.firing {
					continue
				}
				where := resourceName(in.labels)
				switch {
				case !ok[s.r.UID] || !onTarget(in.labels, st.Incident, st.Fleet.Account):
					if !reported[s.r.UID+where] {
						reported[s.r.UID+where] = true
						t.Errorf("%s on %s (%s), delay %s: %s fired on %s at S%+v (value %.3g); the incident is %s %s of %s",
							c.scenario, sh.name, sh.about, d, s.r.UID, where, at.Sub(start), in.lastVal, st.Incident.Level, st.Incident.Name, st.Incident.Endpoint)
					}
				case at.Before(signal):
					if !reported[s.r.UID+"early"] {
						reported[s.r.UID+"early"] = true
						t.Errorf("%s on %s (%s), delay %s: %s fired on %s at S%+v, before the signal at S%+v", c.scenario, sh.name, sh.about, d, s.r.UID, where, at.Sub(start), c.signal)
					}
				case pages[s.r.UID] && res.page < 0:
					res.page = at.Sub(signal)
					if c.whole {
						res.note = s.r.UID + describeWhole(ctx, t, ds, c, st, at, in)
					}
				}
			}
		}
	}
	checkFinite(t, states, fmt.Sprintf("%s on %s, delay %s", c.scenario, sh.name, d))
	switch {
	case c.scenario == "healthy":
	case res.page < 0:
		t.Errorf("%s on %s, delay %s: no page by S+%s (want %v on %s %s)", c.scenario, sh.name, d, pageAfter, c.rules, st.Incident.Level, st.Incident.Name)
	case !c.whole && d <= budgetDelay && res.page > pageBudget:
		t.Errorf("%s on %s: paged %s after its signal with samples arriving %s late, want at most %s", c.scenario, sh.name, res.page, d, pageBudget)
	}
	return res
}

// describeWhole notes, for an incident spanning the history, what the page said: the leak's
// projected time to full and the share of its IC's GPU memory used at the time.
func describeWhole(ctx context.Context, t *testing.T, ds backend.QueryDataHandler, c pageCase, st *stack.Stack, at time.Time, in *instance) string {
	if c.scenario != "gpu-memory-leak" {
		return ""
	}
	host, ic := in.labels["instance"], in.labels["inference_component"]
	sel := func(m string) string {
		return fmt.Sprintf(`sum(%s{"@resource.host.id"=%q, "aws.sagemaker.inference_component.name"=%q})`, m, host, ic)
	}
	used, err := queryRule(ctx, ds, rule{Query: "100 * " + sel("DCGM_FI_DEV_FB_USED") + " / (" + sel("DCGM_FI_DEV_FB_USED") + " + " + sel("DCGM_FI_DEV_FB_FREE") + ")", Window: time.Minute}, at)
	if err != nil || len(used) == 0 || len(used[0].values) == 0 {
		t.Errorf("GPU memory of %s on %s at the page: %v", ic, host, err)
		return ""
	}
	pct := used[0].values[len(used[0].values)-1]
	if pct >= 95 {
		t.Errorf("gpu-memory-leak paged at %.1f %% used; it must page long before 95 %%", pct)
	}
	return fmt.Sprintf(" at %.1f %% used, full projected in %.1f h (%s after the history began)", pct, in.lastVal, at.Sub(st.End.Add(-pageHistory)).Round(time.Minute))
}

// pageTable writes the results as markdown: one row per scenario, one column per shape.
func pageTable(results []pageResult) string {
	shapes := []string{"default"}
	for _, seed := range pageSeeds {
		shapes = append(shapes, fmt.Sprintf("seed %d", seed))
	}
	cell := map[string]map[string]string{}
	for _, r := range results {
		if cell[r.scenario] == nil {
			cell[r.scenario] = map[string]string{}
		}
		v := "never"
		switch {
		case r.scenario == "healthy" && r.page < 0:
			v = "quiet"
		case r.page >= 0:
			v = fmt.Sprintf("%d min", int(r.page/time.Minute))
		}
		cell[r.scenario][r.shape] = v
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	fmt.Fprintln(w, "| incident\t| "+strings.Join(shapes, "\t| ")+"\t|")
	fmt.Fprintln(w, "|---"+strings.Repeat("\t|---", len(shapes))+"\t|")
	for _, c := range pageCases {
		row := []string{c.scenario}
		for _, s := range shapes {
			v, ok := cell[c.scenario][s]
			if !ok {
				v = "-"
			}
			row = append(row, v)
		}
		fmt.Fprintln(w, "| "+strings.Join(row, "\t| ")+"\t|")
	}
	_ = w.Flush()
	b.WriteString("\n")
	slices.SortFunc(results, func(a, b pageResult) int {
		return strings.Compare(a.scenario+a.shape, b.scenario+b.shape)
	})
	for _, r := range results {
		if r.note != "" {
			fmt.Fprintf(&b, "%s on %s (%s): %s\n", r.scenario, r.shape, r.about, r.note)
		}
	}
	return b.String()
}

// Without INFERSCOPE_DELAYS=all every case still plays at the contract's delay, and every
// scenario and every shape meet every other delay at least once.
func TestDelaysOfCoverEveryScenarioAndShape(t *testing.T) {
	const shapes = 4
	for _, all := range []bool{false, true} {
		byScenario := map[int]map[time.Duration]bool{}
		byShape := map[int]map[time.Duration]bool{}
		plays := 0
		for i := range pageCases {
			byScenario[i] = map[time.Duration]bool{}
			for k := 0; k < shapes; k++ {
				if byShape[k] == nil {
					byShape[k] = map[time.Duration]bool{}
				}
				ds := delaysOf(i, k, shapes, all)
				if !slices.Contains(ds, budgetDelay) {
					t.Errorf("all=%v: case %d on shape %d plays at %v, not at %s", all, i, k, ds, budgetDelay)
				}
				for _, d := range ds {
					byScenario[i][d], byShape[k][d] = true, true
				}
				plays += len(ds)
			}
		}
		for _, d := range arrivalDelays {
			for i, m := range byScenario {
				if !m[d] {
					t.Errorf("all=%v: %s never plays at delay %s", all, pageCases[i].scenario, d)
				}
			}
			for k, m := range byShape {
				if !m[d] {
					t.Errorf("all=%v: shape %d never plays at delay %s", all, k, d)
				}
			}
		}
		want := len(pageCases) * shapes * len(arrivalDelays)
		if !all {
			want = len(pageCases) * (shapes + len(arrivalDelays) - 1)
		}
		if plays != want {
			t.Errorf("all=%v: %d plays, want %d", all, plays, want)
		}
	}
}
