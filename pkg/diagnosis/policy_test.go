package diagnosis

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
)

const icConcurrency = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"

// TestPoliciesOf: each IC's target is the concurrency policy's (the lowest of several),
// another metric's only when none tracks concurrency; copies come from the inventory of the
// IC's own account or stay unknown; two accounts' ICs of one name stay apart.
func TestPoliciesOf(t *testing.T) {
	tt := func(metric string, target float64) awsapi.ScalingPolicy {
		return awsapi.ScalingPolicy{Metric: metric, Target: target}
	}
	ic := func(acct, name string, ps ...awsapi.ScalingPolicy) awsapi.ScalableTarget {
		return awsapi.ScalableTarget{ResourceID: "inference-component/" + name, InferenceComponent: name, Account: acct, Min: 1, Max: 6, Policies: ps}
	}
	const a, b = "111111111111", "222222222222"
	targets := []awsapi.ScalableTarget{
		ic(a, "one", tt(icConcurrency, 8)),
		ic(a, "two", tt("SageMakerInferenceComponentInvocationsPerCopy", 50), tt(icConcurrency, 12), tt("ConcurrentRequestsPerCopy", 10)),
		ic(a, "invocations", tt("SageMakerInferenceComponentInvocationsPerCopy", 50)),
		ic(a, "step", awsapi.ScalingPolicy{}),
		ic(b, "one", tt(icConcurrency, 20)),
	}
	got := policiesOf(targets, map[ICKey]int{{a, "one"}: 3, {a, "step"}: 1, {b, "step"}: 7})
	want := &Policies{Own: []string{a, b}, ICs: map[ICKey]Policy{
		{a, "one"}:         {Metric: icConcurrency, Target: 8, Min: 1, Max: 6, Copies: 3},
		{a, "two"}:         {Metric: "ConcurrentRequestsPerCopy", Target: 10, Min: 1, Max: 6, Copies: -1},
		{a, "invocations"}: {Metric: "SageMakerInferenceComponentInvocationsPerCopy", Target: 50, Min: 1, Max: 6, Copies: -1},
		{a, "step"}:        {Min: 1, Max: 6, Copies: 1},
		{b, "one"}:         {Metric: icConcurrency, Target: 20, Min: 1, Max: 6, Copies: -1},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	for name, concurrency := range map[string]bool{"one": true, "two": true, "invocations": false, "step": false} {
		if got.ICs[ICKey{a, name}].tracksConcurrency() != concurrency {
			t.Errorf("%s tracks concurrency: %v, want %v", name, !concurrency, concurrency)
		}
	}
}

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

// scalingAPI answers the two reads AWSPolicies makes; the other methods are not called.
type scalingAPI struct {
	awsapi.API
	targets []awsapi.ScalableTarget
	inv     awsapi.Inventory
	invErr  error
}

func (a scalingAPI) ScalingTargets(context.Context) ([]awsapi.ScalableTarget, error) {
	return a.targets, nil
}
func (a scalingAPI) Inventory(context.Context) (awsapi.Inventory, error) { return a.inv, a.invErr }

// TestAWSPolicies: the copies come from the IC's account's inventory; an inventory that
// cannot be read keeps its error (the next step names it); without targets the caller's
// account is unknown (the inventory's endpoints do not say whose policies the read covers).
func TestAWSPolicies(t *testing.T) {
	const own = "111111111111"
	arn := func(kind, name string) string { return "arn:aws:sagemaker:us-east-1:" + own + ":" + kind + "/" + name }
	inv := awsapi.Inventory{Endpoints: []awsapi.Endpoint{{Name: "ep", ARN: arn("endpoint", "ep"),
		Components: []awsapi.Component{{Name: "ic-a", ARN: arn("inference-component", "ic-a"), DesiredCopies: 3}}}}}
	target := []awsapi.ScalableTarget{{ResourceID: "inference-component/ic-a", InferenceComponent: "ic-a", Account: own, Min: 1, Max: 4}}
	denied := &awsapi.PermissionError{Action: "sagemaker:DescribeInferenceComponent", Err: errors.New("AccessDenied")}
	for _, c := range []struct {
		name    string
		api     scalingAPI
		own     []string
		copies  int
		wantErr error
	}{
		{"read", scalingAPI{targets: target, inv: inv}, []string{own}, 3, nil},
		{"inventory denied", scalingAPI{targets: target, invErr: denied}, []string{own}, -1, denied},
		{"components denied", scalingAPI{targets: target, inv: awsapi.Inventory{Endpoints: inv.Endpoints[:0], ComponentsErr: denied}}, []string{own}, -1, denied},
		{"no targets: the account is unknown", scalingAPI{inv: inv}, nil, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := AWSPolicies(c.api, time.Now)(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			pol, registered, _ := p.of(own, "ic-a")
			if !slices.Equal(p.Own, c.own) || (registered && pol.Copies != c.copies) || !errors.Is(p.CopiesErr, c.wantErr) || p.CopiesAt.IsZero() {
				t.Errorf("got %+v (ic-a %+v), want own %v, copies %d, error %v", p, pol, c.own, c.copies, c.wantErr)
			}
		})
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
