package diagnosis

import (
	"context"
	"errors"
	"testing"
)

// TestReadPoliciesOnce: the source is asked once per run however many rules ask, and its
// failure is one warning.
func TestReadPoliciesOnce(t *testing.T) {
	calls := 0
	e := &env{cfg: DefaultConfig(), warnings: &warnings{seen: map[string]bool{}}, policies: func(context.Context) (map[string]Policy, error) {
		calls++
		return nil, errors.New("denied")
	}}
	for range 3 {
		if _, ok := e.policyTarget(context.Background(), "x"); ok {
			t.Fatal("a failed read gave a target")
		}
	}
	if calls != 1 || len(e.warnings.list) != 1 {
		t.Errorf("%d reads and warnings %q, want one of each", calls, e.warnings.list)
	}
}
