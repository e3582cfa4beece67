package diagnosis

import "testing"

// TestStandingFindingsRankBelowIncidents: idle capacity, even a warning with a high score,
// comes after every incident, even an info one; among themselves standing findings rank by
// severity and score as incidents do.
func TestStandingFindingsRankBelowIncidents(t *testing.T) {
	fs := []Finding{
		{Rule: idleRuleID, Severity: Info, Score: 9, Target: Target{Name: "b"}, standing: true},
		{Rule: idleRuleID, Severity: Warning, Score: 14, Target: Target{Name: "a"}, standing: true},
		{Rule: "throughput-drop", Severity: Info, Score: 20},
		{Rule: "kv-cache-saturation", Severity: Critical, Score: 85},
	}
	Rank(fs)
	want := []string{"kv-cache-saturation", "throughput-drop", idleRuleID + "/a", idleRuleID + "/b"}
	for i, f := range fs {
		got := f.Rule
		if f.standing {
			got += "/" + f.Target.Name
		}
		if got != want[i] {
			t.Fatalf("rank %d = %s, want order %v", i+1, got, want)
		}
	}
}
