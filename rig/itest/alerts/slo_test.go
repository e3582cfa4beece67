package alerts_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// sloTarget is one target of the Performance dashboard's SLOs row, variables substituted.
type sloTarget struct{ panel, column, expr string }

// sloTargets reads the SLO tables (panels 50 and 51) of the generated Performance dashboard
// and substitutes the dashboard's default variable values, as Grafana would on load.
func sloTargets(t *testing.T) []sloTarget {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "provisioning", "dashboards", "performance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			ID              int              `json:"id"`
			Title           string           `json:"title"`
			Targets         []map[string]any `json:"targets"`
			Transformations []struct {
				ID      string         `json:"id"`
				Options map[string]any `json:"options"`
			} `json:"transformations"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name     string `json:"name"`
				AllValue string `json:"allValue"`
				Current  struct {
					Value any `json:"value"`
				} `json:"current"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	// Longest names first, so no variable is replaced inside a longer one.
	vars := d.Templating.List
	sort.Slice(vars, func(i, j int) bool { return len(vars[i].Name) > len(vars[j].Name) })
	var pairs []string
	for _, v := range vars {
		val, _ := v.Current.Value.(string)
		if val == "$__all" {
			val = v.AllValue
		}
		pairs = append(pairs, "$"+v.Name, val)
	}
	subst := strings.NewReplacer(pairs...)
	var out []sloTarget
	for _, p := range d.Panels {
		if p.ID != 50 && p.ID != 51 {
			continue
		}
		rename := map[string]any{}
		for _, tr := range p.Transformations {
			if r, ok := tr.Options["renameByName"].(map[string]any); ok {
				rename = r
			}
		}
		for _, tg := range p.Targets {
			col, _ := rename["Value #"+tg["refId"].(string)].(string)
			out = append(out, sloTarget{panel: p.Title, column: col, expr: subst.Replace(tg["expr"].(string))})
		}
	}
	if len(out) != 6 {
		t.Fatalf("found %d SLO targets in panels 50 and 51, want 6", len(out))
	}
	return out
}

// sloValues runs every SLO column over the whole history and returns column → resource → value.
func sloValues(t *testing.T, scenario string) map[string]map[string]float64 {
	st, ds := startPlugin(t, stack.Options{Scenario: scenario, Seed: 42, History: 3 * time.Hour, End: stack.PinnedEnd}, nil)
	out := map[string]map[string]float64{}
	for _, tg := range sloTargets(t) {
		ss, err := queryRule(context.Background(), ds, rule{UID: tg.column, Query: tg.expr, Window: 3 * time.Hour}, st.End)
		if err != nil {
			t.Fatalf("%s / %s: %v\n%s", tg.panel, tg.column, err, tg.expr)
		}
		out[tg.column] = map[string]float64{}
		for _, s := range ss {
			name := s.labels["aws.sagemaker.inference_component.name"]
			if name == "" {
				name = s.labels["aws.sagemaker.endpoint.name"]
			}
			out[tg.column][name] = reduce(s.values, "last", "dropNN", 0)
		}
		if len(out[tg.column]) == 0 {
			t.Errorf("%s / %s: no rows in %s", tg.panel, tg.column, scenario)
		}
	}
	return out
}

// The SLOs row shows attainment and budget against the emulator: met with budget to spare on
// the healthy fleet, missed where the scenarios hurt TTFT (engine queueing) and availability
// (a model crash), over a 3 h range of which the incident takes the last 90 minutes.
func TestSLORowAgainstEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: backfills simulated fleets")
	}
	healthy := sloValues(t, "healthy")
	for col, rows := range healthy {
		for name, v := range rows {
			switch {
			case strings.Contains(col, "attainment") && v < builder.SLOLatencyObjective:
				t.Errorf("healthy: %s of %s is %.4f, below the objective", col, name, v)
			case strings.Contains(col, "Attainment") && v < builder.SLOErrorObjective:
				t.Errorf("healthy: %s of %s is %.4f, below the objective", col, name, v)
			case strings.Contains(strings.ToLower(col), "budget") && !(v > 0 && v <= 1):
				t.Errorf("healthy: %s of %s is %.3f, want within (0, 1]", col, name, v)
			}
		}
	}
	t.Logf("healthy: %v", healthy)

	q := sloValues(t, "engine-queueing")
	if v := q["TTFT attainment"]["chat-qwen-7b"]; !(v < builder.SLOLatencyObjective) {
		t.Errorf("engine-queueing: TTFT attainment of chat-qwen-7b %.3f, want below %v", v, builder.SLOLatencyObjective)
	}
	if v := q["TTFT budget left"]["chat-qwen-7b"]; !(v < 0) {
		t.Errorf("engine-queueing: TTFT budget left of chat-qwen-7b %.3f, want spent (< 0)", v)
	}
	if v := q["TTFT budget left"]["chat-llama-8b"]; !(v > 0) {
		t.Errorf("engine-queueing: the other ICs keep their budget; chat-llama-8b has %.3f", v)
	}
	t.Logf("engine-queueing: TTFT attainment %v, budget %v", q["TTFT attainment"], q["TTFT budget left"])

	c := sloValues(t, "model-crash")
	if v := c["Budget left"]["summarize"]; !(v < 0) {
		t.Errorf("model-crash: availability budget of summarize %.3f, want spent (< 0)", v)
	}
	if v := c["Budget left"]["docs-qa"]; !(v > 0) {
		t.Errorf("model-crash: docs-qa keeps its availability budget, has %.3f", v)
	}
	t.Logf("model-crash: availability %v, budget %v", c["Attainment"], c["Budget left"])
}
