package diagnosis

import (
	"context"
	"errors"
	"testing"
)

// TestPoliciesOfAccount: an IC of an account the read covers is registered or not; one of
// another account is not readable, whatever its name; a series without an account label is
// the caller's, found by name.
func TestPoliciesOfAccount(t *testing.T) {
	const own, other = "111111111111", "222222222222"
	p := &Policies{Own: []string{own}, ICs: map[ICKey]Policy{{own, "ic-a"}: {Target: 8, Max: 4}}}
	for _, c := range []struct {
		acct, ic             string
		registered, readable bool
	}{
		{own, "ic-a", true, true},
		{own, "ic-b", false, true},
		{other, "ic-a", false, false},
		{other, "ic-b", false, false},
		{"", "ic-a", true, true},
		{"", "ic-b", false, true},
	} {
		pol, registered, readable := p.of(c.acct, c.ic)
		if registered != c.registered || readable != c.readable || (registered && pol.Target != 8) {
			t.Errorf("%s/%s: %+v registered %v readable %v, want registered %v readable %v", c.acct, c.ic, pol, registered, readable, c.registered, c.readable)
		}
	}
	if _, registered, readable := (*Policies)(nil).of(own, "ic-a"); registered || readable {
		t.Error("no read covers an account")
	}
}

// TestReadPoliciesOnce: the source is asked once per run however many rules ask, and its
// failure is one warning.
func TestReadPoliciesOnce(t *testing.T) {
	calls := 0
	e := &env{cfg: DefaultConfig(), warnings: &warnings{seen: map[string]bool{}}, policies: func(context.Context) (*Policies, error) {
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
