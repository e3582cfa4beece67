package alerts_test

import (
	"testing"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestPagesCarryTheirTeam: the rules intended for a scenario fire on its target with team
// equal to the target's Team tag after Grafana's file-provisioning expansion and template
// rendering (a value with dots, spaces, UTF-8, quotes and a $ provisioning must not expand),
// and with team "untagged" when the target has no tags: the join neither drops nor adds a
// page. An IC tagged with a team other than its endpoint's pages its own team, and one with
// other tags but no Team its endpoint's (as cost charges them, cost.TagOf). One small stack per case, the scenario's rules only, over the
// matrix's span.
func TestPagesCarryTheirTeam(t *testing.T) {
	cases := []struct {
		name, scenario, endpoint, ic string
		epTags, icTags               map[string]string
		want                         string
	}{
		{name: "tagged", scenario: "model-crash", endpoint: "summarize",
			epTags: map[string]string{fleet.TeamKey: `search.ranking "ü" $HOME`, "Environment": "prod"}, want: `search.ranking "ü" $HOME`},
		{name: "untagged", scenario: "model-crash", endpoint: "summarize", want: "untagged"},
		{name: "ic-own-team", scenario: "kv-saturation", endpoint: "chat-ic", ic: "chat-llama-8b",
			epTags: map[string]string{fleet.TeamKey: "chat platform"}, icTags: map[string]string{fleet.TeamKey: "llama.serving ü"}, want: "llama.serving ü"},
		{name: "ic-untagged", scenario: "kv-saturation", endpoint: "chat-ic", ic: "chat-llama-8b",
			epTags: map[string]string{fleet.TeamKey: "chat platform"}, icTags: map[string]string{"Environment": "prod"}, want: "chat platform"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rules []rule
			for _, r := range loadRules(t) {
				if _, ok := intended[r.UID][tc.scenario]; ok {
					if r.Labels["team"] == "" {
						t.Errorf("%s: no team label; regenerate the rules with go run ./dashboards/cmd/gen", r.UID)
					}
					rules = append(rules, r)
				}
			}
			if len(rules) < 2 {
				t.Fatalf("%d rules intended for %s", len(rules), tc.scenario)
			}
			f := *fleet.Default()
			f.Endpoints = append([]fleet.Endpoint(nil), f.Endpoints...)
			found := false
			for i := range f.Endpoints {
				e := &f.Endpoints[i]
				if e.Name != tc.endpoint {
					continue
				}
				e.Tags = tc.epTags
				found = tc.ic == ""
				e.InferenceComponents = append([]fleet.InferenceComponent(nil), e.InferenceComponents...)
				for j := range e.InferenceComponents {
					if e.InferenceComponents[j].Name == tc.ic {
						e.InferenceComponents[j].Tags = tc.icTags
						found = true
					}
				}
			}
			if !found {
				t.Fatalf("the default fleet has no endpoint %s with IC %q", tc.endpoint, tc.ic)
			}
			states := evaluateSpan(t, stack.Options{Scenario: tc.scenario, Seed: 42, History: history, End: stack.PinnedEnd, Fleet: &f}, rules, evalSpan, rules[0].Interval)
			checkFinite(t, states, tc.scenario)
			for _, s := range states {
				fired := s.fired()
				if len(fired) == 0 {
					t.Errorf("%s did not fire in %s with team %q; last values: %s", s.r.UID, tc.scenario, tc.want, lastValues(s))
					continue
				}
				for _, in := range fired {
					onTarget := in.labels["endpoint"] == tc.endpoint && (tc.ic == "" || in.labels["inference_component"] == tc.ic)
					if !onTarget || in.labels["team"] != tc.want {
						t.Errorf("%s fired on %v, want only %s %s with team %q", s.r.UID, in.labels, tc.endpoint, tc.ic, tc.want)
					}
				}
				t.Logf("%s: %d fired, e.g. %v", s.r.UID, len(fired), fired[0].labels)
			}
		})
	}
}
