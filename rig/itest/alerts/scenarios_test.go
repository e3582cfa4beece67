package alerts_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// target is the resource a rule must fire on in a scenario: alert labels that must match.
type target map[string]string

// intended says where each rule must fire (rig/simulator/SCENARIOS.md names the targets of
// the default fleet); everywhere else, the healthy fleet included, it must stay quiet.
var intended = map[string]map[string]target{
	"inferscope-kv-saturation":     {"kv-saturation": {"endpoint": "chat-ic", "inference_component": "chat-llama-8b"}},
	"inferscope-engine-queueing":   {"engine-queueing": {"endpoint": "chat-ic", "inference_component": "chat-qwen-7b"}},
	"inferscope-gpu-memory-growth": {"gpu-memory-leak": {"endpoint": "chat-ic"}},
	"inferscope-vram-drop":         {"model-crash": {"endpoint": "summarize"}},
	"inferscope-az-no-traffic":     {"az-imbalance": {"endpoint": "chat-ic", "az": "us-east-1c"}},
	"inferscope-ice":               {"ice-exhaustion": {"instance_type": "ml.g5.12xlarge"}},
	// The degraded GPU: its corrected ECC errors climb, it runs hot, then a double-bit error.
	"inferscope-gpu-ecc-rising":        {"gpu-degrade": {"endpoint": "chat-ic"}},
	"inferscope-gpu-hot":               {"gpu-degrade": {"endpoint": "chat-ic"}},
	"inferscope-gpu-uncorrectable-ecc": {"gpu-degrade": {"endpoint": "chat-ic"}},
	// Vended series missing while the GPUs work: the account's switch is off.
	"inferscope-enrichment-off":     {"enrichment-off": {"account": "123456789012"}},
	"inferscope-slow-cold-start":    {"slow-cold-start": {"endpoint": "chat-ic", "inference_component": "chat-llama-8b"}},
	"inferscope-5xx-rate":           {"model-crash": {"endpoint": "summarize"}},
	"inferscope-scaling-not-firing": {"scaling-not-firing": {"inference_component": "code-llama-8b"}},
	// TTFT SLO: both TTFT incidents burn the budget of their IC.
	"inferscope-slo-ttft-fast": {"kv-saturation": {"inference_component": "chat-llama-8b"}, "engine-queueing": {"inference_component": "chat-qwen-7b"}},
	"inferscope-slo-ttft-slow": {"kv-saturation": {"inference_component": "chat-llama-8b"}, "engine-queueing": {"inference_component": "chat-qwen-7b"}},
	// Availability SLO: the crash fails a share of summarize's invocations.
	"inferscope-slo-errors-fast": {"model-crash": {"endpoint": "summarize"}},
	"inferscope-slo-errors-slow": {"model-crash": {"endpoint": "summarize"}},
	// ITL SLO: no scenario slows decoding that much; it must stay quiet everywhere. In
	// gpu-degrade one throttled copy decodes ~1.8× slower, but its IC's ITL stays within the
	// objective, so no firing there either.
	"inferscope-slo-itl-fast": {},
	"inferscope-slo-itl-slow": {},
}

var scenarios = []string{"healthy", "kv-saturation", "engine-queueing", "gpu-memory-leak", "model-crash",
	"az-imbalance", "scaling-not-firing", "slow-cold-start", "ice-exhaustion", "gpu-degrade", "enrichment-off"}

// Evaluation schedule: every rule evaluated like Grafana's scheduler, at its group's
// interval (one minute), over the last part of the history, where every incident is active
// (SCENARIOS.md: the last 90 minutes).
const (
	history  = 4 * time.Hour
	evalSpan = 90 * time.Minute
)

// startPlugin runs a stack with the scenario and a data source for it, as a user would
// configure one; configure (when not nil) edits the data source's jsonData.
func startPlugin(t testing.TB, opts stack.Options, configure func(jsonData map[string]string)) (*stack.Stack, *plugin.Datasource) {
	t.Helper()
	st := startStack(t, opts)
	return st, newDatasource(t, st, configure)
}

// startStack backfills and serves a stack until the test ends.
func startStack(t testing.TB, opts stack.Options) *stack.Stack {
	t.Helper()
	st, err := stack.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the stack: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// newDatasource is a data source for st at CloudWatch's account rate instead of the default
// 20/s (the tests send hours of evaluations at once); configure edits its jsonData further.
func newDatasource(t testing.TB, st *stack.Stack, configure func(jsonData map[string]string)) *plugin.Datasource {
	t.Helper()
	jsonData, secure := st.DataSourceSettings()
	jsonData["requestsPerSecond"] = "300"
	if configure != nil {
		configure(jsonData)
	}
	return dstest.New(t, "alerts", jsonData, secure)
}

// runScenario evaluates every rule over the span and returns the states.
func runScenario(t *testing.T, scenario string, rules []rule) []*ruleState {
	return evaluateSpan(t, stack.Options{Scenario: scenario, Seed: 42, History: history, End: stack.PinnedEnd}, rules, evalSpan, rules[0].Interval)
}

// evaluateSpan starts a stack and evaluates every rule every `every` over the last span.
func evaluateSpan(t *testing.T, opts stack.Options, rules []rule, span, every time.Duration) []*ruleState {
	st, ds := startPlugin(t, opts, nil)
	return sweep(t, ds, rules, st.End.Add(-span), st.End, every)
}

// sweep evaluates every rule every `every` from `from` to `to` and returns the states.
func sweep(t *testing.T, ds backend.QueryDataHandler, rules []rule, from, to time.Time, every time.Duration) []*ruleState {
	t.Helper()
	states := make([]*ruleState, len(rules))
	for i, r := range rules {
		states[i] = newRuleState(r)
	}
	for at := from; !at.After(to); at = at.Add(every) {
		if err := evaluateAll(context.Background(), ds, states, at); err != nil {
			t.Fatal(err)
		}
	}
	return states
}

func TestRuleScenarioMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: backfills eleven simulated fleets and evaluates every rule over 90 minutes of each")
	}
	t.Parallel()
	rules := loadRules(t)
	for _, r := range rules {
		if r.Interval != rules[0].Interval {
			t.Fatalf("groups evaluate at %s and %s; the test evaluates all rules at one interval", r.Interval, rules[0].Interval)
		}
		if _, ok := intended[r.UID]; !ok {
			t.Errorf("rule %s has no intended scenarios in this test; add it to intended", r.UID)
		}
	}
	var mu sync.Mutex
	cells := map[string]map[string]string{} // rule -> scenario -> cell
	for _, r := range rules {
		cells[r.UID] = map[string]string{}
	}
	// The group returns once its parallel scenarios are done, before the table is written.
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(sc, func(t *testing.T) {
				t.Parallel()
				matrixScenario(t, sc, rules, &mu, cells)
			})
		}
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "rule\t"+strings.Join(scenarios, "\t"))
	for _, r := range rules {
		row := []string{strings.TrimPrefix(r.UID, "inferscope-")}
		for _, sc := range scenarios {
			row = append(row, cells[r.UID][sc])
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	_ = w.Flush()
	t.Logf("rule × scenario (evaluated every %s over the last %s of a %s history):\n%s", rules[0].Interval, evalSpan, history, b.String())
}

// matrixScenario evaluates every rule over the span of one scenario, fails t where a rule
// fires outside its intended scenarios and resources or misses one, and fills the scenario's
// column of cells.
func matrixScenario(t *testing.T, sc string, rules []rule, mu *sync.Mutex, cells map[string]map[string]string) {
	states := runScenario(t, sc, rules)
	checkFinite(t, states, sc)
	for _, s := range states {
		want, should := intended[s.r.UID][sc]
		fired := s.fired()
		var names []string
		for _, in := range fired {
			names = append(names, resourceName(in.labels))
		}
		slices.Sort(names)
		names = slices.Compact(names)
		cell := "·"
		if len(fired) > 0 {
			cell = "FIRES " + strings.Join(names, ",")
		}
		switch {
		case should && len(fired) == 0:
			cell = "MISSING"
			t.Errorf("%s did not fire in %s (want %v); last values: %s", s.r.UID, sc, want, lastValues(s))
		case !should && len(fired) > 0:
			cell = "UNEXPECTED " + strings.Join(names, ",")
			t.Errorf("%s fired in %s on %v", s.r.UID, sc, names)
		case should:
			for _, in := range fired {
				if !matches(in.labels, want) {
					cell = "WRONG " + strings.Join(names, ",")
					t.Errorf("%s fired in %s on %v, want only %v", s.r.UID, sc, in.labels, want)
				}
			}
		}
		mu.Lock()
		cells[s.r.UID][sc] = cell
		mu.Unlock()
	}
}

// resourceName is the alert's resource in a few words (its non-empty resource labels).
func resourceName(l map[string]string) string {
	var parts []string
	for _, k := range []string{"endpoint", "inference_component", "instance", "az", "instance_type"} {
		if v := l[k]; v != "" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, "/")
}

func matches(l map[string]string, want target) bool {
	for k, v := range want {
		if l[k] != v {
			return false
		}
	}
	return true
}

// lastValues shows the reduced values of a rule's series at the last evaluation (why it
// did not fire).
func lastValues(s *ruleState) string {
	keys := slices.Sorted(maps.Keys(s.instances))
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.3g", resourceName(s.instances[k].labels), s.instances[k].lastVal))
	}
	if len(parts) == 0 {
		return "no series"
	}
	return strings.Join(parts, " ")
}

// The healthy fleet stays quiet at other hours of its diurnal load and with other seeds
// (other bursts and scaling events) than the matrix's.
func TestHealthyAroundTheClock(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: backfills four simulated fleets")
	}
	t.Parallel()
	rules := loadRules(t)
	for i, hour := range []int{0, 9, 15, 20} {
		end := time.Date(2026, 11, 3, hour, 0, 0, 0, time.UTC)
		t.Run(end.Format("15:04"), func(t *testing.T) {
			t.Parallel()
			opts := stack.Options{Scenario: "healthy", Seed: int64(100 + i), History: history, End: end}
			for _, s := range evaluateSpan(t, opts, rules, 2*time.Hour, 4*time.Minute) {
				// Rules whose signal is always present must have seen series: the fleet answered.
				if (s.r.UID == "inferscope-az-no-traffic" || s.r.UID == "inferscope-engine-queueing") && len(s.instances) == 0 {
					t.Errorf("%s saw no series: the healthy fleet did not answer", s.r.UID)
				}
				for _, in := range s.fired() {
					t.Errorf("%s fired on the healthy fleet (seed %d, %s) on %s (value %.3g)", s.r.UID, opts.Seed, end.Format("15:04"), resourceName(in.labels), in.lastVal)
				}
			}
		})
	}
}
