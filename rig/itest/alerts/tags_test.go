package alerts_test

import (
	"testing"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestPagesCarryTheirTeam: in model-crash, the rules intended for the crash fire on
// summarize with team equal to its Team tag after Grafana's file-provisioning expansion and
// template rendering (a value with dots, spaces, UTF-8, quotes and a $ provisioning must not
// expand), and with team "untagged" when summarize has no tags: the join neither drops nor
// adds a page. Two small stacks, the crash's rules only, over the matrix's span.
func TestPagesCarryTheirTeam(t *testing.T) {
	const scenario, target = "model-crash", "summarize"
	var rules []rule
	for _, r := range loadRules(t) {
		if _, ok := intended[r.UID][scenario]; ok {
			if r.Labels["team"] == "" {
				t.Errorf("%s: no team label; regenerate the rules with go run ./dashboards/cmd/gen", r.UID)
			}
			rules = append(rules, r)
		}
	}
	if len(rules) < 2 {
		t.Fatalf("%d rules intended for %s", len(rules), scenario)
	}
	for _, team := range []string{`search.ranking "ü" $HOME`, ""} {
		f := *fleet.Default()
		f.Endpoints = append([]fleet.Endpoint(nil), f.Endpoints...)
		tagged := false
		for i := range f.Endpoints {
			if f.Endpoints[i].Name == target && team != "" {
				f.Endpoints[i].Tags = map[string]string{fleet.TeamKey: team, "Environment": "prod"}
				tagged = true
			}
		}
		want := team
		if !tagged {
			want = "untagged"
		}
		states := evaluateSpan(t, stack.Options{Scenario: scenario, Seed: 42, History: history, End: stack.PinnedEnd, Fleet: &f}, rules, evalSpan, rules[0].Interval)
		checkFinite(t, states, scenario)
		for _, s := range states {
			fired := s.fired()
			if len(fired) == 0 {
				t.Errorf("%s did not fire in %s with team %q; last values: %s", s.r.UID, scenario, want, lastValues(s))
				continue
			}
			for _, in := range fired {
				if in.labels["endpoint"] != target || in.labels["team"] != want {
					t.Errorf("%s fired on %v, want only %s with team %q", s.r.UID, in.labels, target, want)
				}
			}
			t.Logf("%s: %d fired, e.g. %v", s.r.UID, len(fired), fired[0].labels)
		}
	}
}
