package awspolicy

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
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
	got := policiesOf(targets, map[diagnosis.ICKey]int{{Account: a, IC: "one"}: 3, {Account: a, IC: "step"}: 1, {Account: b, IC: "step"}: 7})
	want := &diagnosis.Policies{Own: []string{a, b}, ICs: map[diagnosis.ICKey]diagnosis.Policy{
		{Account: a, IC: "one"}:         {Metric: icConcurrency, Target: 8, Min: 1, Max: 6, Copies: 3},
		{Account: a, IC: "two"}:         {Metric: "ConcurrentRequestsPerCopy", Target: 10, Min: 1, Max: 6, Copies: -1},
		{Account: a, IC: "invocations"}: {Metric: "SageMakerInferenceComponentInvocationsPerCopy", Target: 50, Min: 1, Max: 6, Copies: -1},
		{Account: a, IC: "step"}:        {Min: 1, Max: 6, Copies: 1},
		{Account: b, IC: "one"}:         {Metric: icConcurrency, Target: 20, Min: 1, Max: 6, Copies: -1},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	for name, concurrency := range map[string]bool{"one": true, "two": true, "invocations": false, "step": false} {
		if got.ICs[diagnosis.ICKey{Account: a, IC: name}].TracksConcurrency() != concurrency {
			t.Errorf("%s tracks concurrency: %v, want %v", name, !concurrency, concurrency)
		}
	}
}

// scalingAPI answers the two reads Source makes; the other methods are not called.
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

// TestSource: the copies come from the IC's account's inventory; an inventory that
// cannot be read keeps its error (the next step names it); without targets the caller's
// account is unknown (the inventory's endpoints do not say whose policies the read covers).
func TestSource(t *testing.T) {
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
			p, err := Source(c.api, time.Now)(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			pol, registered := p.ICs[diagnosis.ICKey{Account: own, IC: "ic-a"}]
			if !slices.Equal(p.Own, c.own) || (registered && pol.Copies != c.copies) || !errors.Is(p.CopiesErr, c.wantErr) || p.CopiesAt.IsZero() {
				t.Errorf("got %+v (ic-a %+v), want own %v, copies %d, error %v", p, pol, c.own, c.copies, c.wantErr)
			}
		})
	}
}
