package diagnosis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

// Time to name: the first minute k at which a diagnosis of the hour ending S+k (what
// `diagnose --to S+k --since 1h` runs) ranks the right cause first on the right resource,
// S being when the incident's first signal entered the series.
const (
	ttnTarget  = 5   // minutes: the promise for every step incident
	ttnBefore  = -10 // first minute evaluated, relative to S
	ttnAfter   = 40  // last minute evaluated
	ttnLead    = time.Hour
	ttnHistory = 160 * time.Minute // the lead, the minutes before S, the hour diagnosed and the rules' look-back
)

// ttnFleets are the fleet shapes: the default fleet (0) and generated fleets, one draw per
// seed and scenario (a draw that cannot play the scenario is drawn again).
var ttnFleets = []uint64{0, 7, 19, 31}

// ttnAtMax is scaling-not-firing on a fleet whose overloaded IC cannot scale: its scalable
// target's min and max are its copies. The policy is not at fault, the capacity is.
const ttnAtMax = "scaling-at-max"

// ttnSymptomFirst are the scenarios whose cause is a change: the change rule waits out a
// warm-up and a sustained rise before it blames a deploy, so the symptom it explains (the error
// spike, the overloaded component) may lead for those minutes; the change must still be named
// first within ttnTarget.
var ttnSymptomFirst = map[string]bool{"bad-deploy": true, "bad-config": true}

// ttnCauses name the two scaling incidents apart: the rule alone does not.
var ttnCauses = map[string]string{"scaling-not-firing": "Autoscaling did not fire", ttnAtMax: "Scaled to its max capacity and still over target"}

// ttnRules are the rules that name each scenario: the scorecard's, and the GPU rules for a
// degrading GPU (its thermal throttling or its rising corrected errors).
func ttnRules(scenario string) []string {
	if scenario == "gpu-degrade" {
		return []string{"gpu-hardware", "gpu-thermal"}
	}
	if scenario == ttnAtMax {
		return []string{"scaling"}
	}
	if changeScenarios[scenario] {
		return []string{"change"}
	}
	if r := expectedRule[scenario]; r != "" {
		return []string{r}
	}
	return nil
}

// changeScenarios are named by the change that preceded their signal.
var changeScenarios = map[string]bool{"bad-deploy": true, "bad-config": true}

// ttnNoTarget: incidents without a start to measure from within five minutes: the leak grows
// from the start of the history.
var ttnNoTarget = map[string]bool{"gpu-memory-leak": true}

type ttnResult struct {
	minute int      // time to name, when named
	named  bool     // named first within ttnAfter
	leads  []string // false leads: other causes ranked first on the incident's endpoint from S on
	cell   string
}

// ttnSim draws the case's fleet and simulator: the default fleet for shape 0, else a
// generated fleet that can play the scenario. For ttnAtMax it plays scaling-not-firing with
// the overloaded IC pinned at its copies.
func ttnSim(shape uint64, scenario string, scenarioIndex int) (*fleet.Fleet, *simulator.Simulator, error) {
	if scenario != ttnAtMax {
		return drawSim(shape, scenario, scenarioIndex)
	}
	f, sim, err := drawSim(shape, "scaling-not-firing", scenarioIndex)
	if err != nil {
		return nil, nil, err
	}
	ic := sim.Incident().Name
	for i := range f.Endpoints {
		for j := range f.Endpoints[i].InferenceComponents {
			if c := &f.Endpoints[i].InferenceComponents[j]; c.Name == ic {
				c.MinCopies, c.MaxCopies = c.Copies, c.Copies
			}
		}
	}
	seed := int64(shape)
	if shape == 0 {
		seed = 42
	}
	if sim, err = simulator.NewWithLead(f, "scaling-not-firing", seed, ttnLead); err == nil && sim.Incident().Name != ic {
		err = fmt.Errorf("pinning %s at its copies moved the incident to %s", ic, sim.Incident().Name)
	}
	return f, sim, err
}

func drawSim(shape uint64, scenario string, scenarioIndex int) (*fleet.Fleet, *simulator.Simulator, error) {
	if shape == 0 {
		f := fleet.Default()
		sim, err := simulator.NewWithLead(f, scenario, 42, ttnLead)
		return f, sim, err
	}
	r := rand.New(rand.NewPCG(shape, uint64(scenarioIndex)))
	var err error
	for range 40 {
		var f *fleet.Fleet
		if f, err = fleet.Generate(r, 24); err != nil {
			continue
		}
		var sim *simulator.Simulator
		if sim, err = simulator.NewWithLead(f, scenario, int64(shape), ttnLead); err == nil {
			return f, sim, nil
		}
	}
	return nil, nil, err
}

// unaffected says whether a finding points outside the incident's endpoint.
func unaffected(f Finding, in simulator.Incident) bool {
	ep := f.Target.Endpoint
	if f.Target.Level == LevelEndpoint {
		ep = f.Target.Name
	}
	return in.Endpoint == "" || (ep != "" && ep != in.Endpoint)
}

func namedFirst(fs []Finding, scenario string, rules []string, in simulator.Incident) bool {
	if len(fs) == 0 || len(rules) == 0 {
		return false
	}
	top := fs[0]
	cause := ttnCauses[scenario]
	return top.Severity > Info && slices.Contains(rules, top.Rule) && string(top.Target.Level) == in.Level && top.Target.Name == in.Name &&
		(cause == "" || top.Cause == cause)
}

// timeToName evaluates one case every minute from S+ttnBefore until its cause is named first
// (or S+ttnAfter), and reports every finding above info that is a false alarm: before S, on
// another endpoint, or in a scenario that must stay quiet.
func timeToName(t *testing.T, f *fleet.Fleet, sim *simulator.Simulator, scenario string) ttnResult {
	end := scenarioNow
	// Fifty diagnoses in a row outrun the account's query rate, which a user's one at a time
	// does not: the rate limit is off.
	rg := serveRegion(t, sim, f, end.Add(-ttnHistory), end, time.Minute, emulator.Limits{QueryTPS: -1})
	in := sim.Incident()
	rules := ttnRules(scenario)
	start := in.Start
	if start.IsZero() {
		start = end.Add(-ttnLead) // healthy: no onset, the same minutes
	}
	cfg := DefaultConfig() // the production configuration: the policies come from AWS (the emulator)
	var alarms, leads []string
	ledBy := "" // the table's note of the first false lead
	for k := ttnBefore; k <= ttnAfter; k++ {
		at := start.Add(time.Duration(k) * time.Minute)
		if at.After(end) {
			break
		}
		r, err := diagnoseIn(Region{Querier: rg.Querier, Policies: readAt(rg.Policies, at), Changes: rg.Changes}, Scope{}, at.Add(-time.Hour), at, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range r.Failures {
			t.Errorf("S%+dm: rule %s failed: %s", k, x.Rule, x.Error)
		}
		if k >= 0 && namedFirst(r.Findings, scenario, rules, in) {
			return ttnResult{minute: k, named: true, leads: leads, cell: fmt.Sprint(k) + ledBy}
		}
		if top := r.Findings; k >= 0 && len(rules) > 0 && len(top) > 0 && top[0].Severity > Info && !unaffected(top[0], in) {
			leads = append(leads, fmt.Sprintf("S%+dm: %s on %s", k, top[0].Cause, top[0].Target))
			if ledBy == "" {
				ledBy = fmt.Sprintf(" (%s first from S%+d)", top[0].Rule, k)
			}
		}
		for _, x := range r.Findings {
			if x.Severity > Info && (k < 0 || len(rules) == 0 || unaffected(x, in)) {
				alarms = append(alarms, fmt.Sprintf("S%+dm:%s", k, describe([]Finding{x})))
			}
		}
	}
	for _, a := range alarms[:min(5, len(alarms))] {
		t.Errorf("false alarm (incident %s %s on %s, S %s): %s", in.Level, in.Name, in.Endpoint, start.Format("15:04"), a)
	}
	if len(rules) == 0 {
		if len(alarms) > 0 {
			return ttnResult{cell: "false alarm"}
		}
		return ttnResult{cell: "quiet"}
	}
	return ttnResult{leads: leads, cell: fmt.Sprintf("> %d", ttnAfter) + ledBy}
}

// readAt is src as a user diagnosing at `at` reads it: its copies are those of that moment.
// The emulator's are those at the end of the history, which the scaling scenarios keep flat
// (scaling-not-firing) or pinned (scaling-at-max) from before S on.
func readAt(src PolicySource, at time.Time) PolicySource {
	return func(ctx context.Context) (*Policies, error) {
		p, err := src(ctx)
		if p == nil {
			return nil, err
		}
		c := *p
		c.CopiesAt = at
		return &c, err
	}
}

// TestTimeToName measures time to name per scenario and fleet shape (the table in
// docs/alerting.md, "Time to name"; TIMETONAME_TABLE=path writes it), and asserts the target
// for every step incident, that no other cause ranks first on its endpoint before it, and that
// healthy fleets, the minutes before S and other endpoints raise nothing. Without
// INFERSCOPE_LONG=1 it runs the default fleet and one generated shape per scenario (dstest.Sweep).
func TestTimeToName(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills every scenario on several fleets")
	}
	var (
		mu      sync.Mutex
		results = map[string]map[uint64]ttnResult{}
		names   []string
	)
	// Without INFERSCOPE_LONG=1 each scenario runs on the default fleet and on one generated
	// shape, another one each day and scenario, so every shape still meets every scenario.
	sweep := dstest.NewSweep(t)
	if os.Getenv("TIMETONAME_TABLE") != "" && !sweep.Full {
		t.Fatalf("TIMETONAME_TABLE writes the docs' table of every fleet shape: set %s=1 too", dstest.LongEnv)
	}
	t.Run("cases", func(t *testing.T) {
		for i, sc := range append(simulator.Scenarios(), simulator.Scenario{Name: ttnAtMax}) {
			names = append(names, sc.Name)
			results[sc.Name] = map[uint64]ttnResult{}
			for j, shape := range ttnFleets {
				if shape != 0 && !sweep.Takes(j-1+i, len(ttnFleets)-1) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d", sc.Name, shape), func(t *testing.T) {
					t.Parallel()
					f, sim, err := ttnSim(shape, sc.Name, i)
					res := ttnResult{cell: "n/a"}
					if err == nil {
						res = timeToName(t, f, sim, sc.Name)
					} else {
						t.Logf("fleet shape %d cannot play %s: %v", shape, sc.Name, err)
					}
					mu.Lock()
					results[sc.Name][shape] = res
					mu.Unlock()
				})
			}
		}
	})
	var b strings.Builder
	b.WriteString("| incident |")
	for _, shape := range ttnFleets {
		if shape == 0 {
			b.WriteString(" default fleet |")
		} else {
			fmt.Fprintf(&b, " generated (seed %d) |", shape)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(ttnFleets)) + "\n")
	for _, n := range names {
		fmt.Fprintf(&b, "| %s |", n)
		for _, shape := range ttnFleets {
			cell := "not run"
			if r, ok := results[n][shape]; ok {
				cell = r.cell
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	t.Logf("time to name (minutes after S):\n%s", b.String())
	if path := os.Getenv("TIMETONAME_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, n := range names {
		if len(ttnRules(n)) == 0 || ttnNoTarget[n] {
			continue
		}
		var slow []string
		for _, shape := range ttnFleets {
			if r, ok := results[n][shape]; ok && r.cell != "n/a" && (!r.named || r.minute > ttnTarget) {
				slow = append(slow, fmt.Sprintf("shape %d: %s", shape, r.cell))
			}
		}
		for _, shape := range ttnFleets {
			if leads := results[n][shape].leads; len(leads) > 0 && !ttnSymptomFirst[n] {
				t.Errorf("%s on shape %d: another cause ranked first %d times before it, first %s", n, shape, len(leads), leads[0])
			}
		}
		if len(slow) > 0 {
			t.Errorf("%s not named first within %d min: %s", n, ttnTarget, strings.Join(slow, ", "))
		}
	}
}
