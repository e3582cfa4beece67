package awsapi

import (
	"context"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	aas "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
)

// DimensionCopies is the SageMaker dimension the diagnosis judges: an inference component's
// copies.
const DimensionCopies = string(aastypes.ScalableDimensionSageMakerInferenceComponentDesiredCopyCount)

// ScalableTarget is one registered scalable target of an IC's copies with its policies.
type ScalableTarget struct {
	// ResourceID is AWS's: inference-component/<name>.
	ResourceID, InferenceComponent string
	// Account is the account in the target's ARN: Application Auto Scaling answers only for
	// the caller's own, so this is the account whose targets the read covers.
	Account  string
	Min, Max int
	Policies []ScalingPolicy
}

// ScalingPolicy is what the diagnosis reads of a target tracking policy: the metric it
// tracks and its target value; other policy types have neither.
type ScalingPolicy struct {
	// Metric is the predefined metric type (e.g.
	// SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution) or the customized
	// metric's name (e.g. ConcurrentRequestsPerCopy); "" when the policy tracks none.
	Metric string
	Target float64
}

// scalingPerPage is the largest page both Describe calls accept.
const scalingPerPage = 50

// ScalingTargets lists the region's IC scalable targets and attaches their
// policies: DescribeScalableTargets, then DescribeScalingPolicies, each paged.
func (c *client) ScalingTargets(ctx context.Context) ([]ScalableTarget, error) {
	ns := aastypes.ServiceNamespaceSagemaker
	tp := aas.NewDescribeScalableTargetsPaginator(c.aas, &aas.DescribeScalableTargetsInput{ServiceNamespace: ns, MaxResults: aws.Int32(scalingPerPage)},
		func(o *aas.DescribeScalableTargetsPaginatorOptions) { o.StopOnDuplicateToken = true })
	raw, err := drain[*aas.DescribeScalableTargetsOutput, aas.Options](ctx, c, ActionDescribeScalableTargets, tp,
		func(p *aas.DescribeScalableTargetsOutput) []aastypes.ScalableTarget { return p.ScalableTargets })
	if err != nil {
		return nil, err
	}
	pp := aas.NewDescribeScalingPoliciesPaginator(c.aas, &aas.DescribeScalingPoliciesInput{ServiceNamespace: ns, MaxResults: aws.Int32(scalingPerPage)},
		func(o *aas.DescribeScalingPoliciesPaginatorOptions) { o.StopOnDuplicateToken = true })
	policies, err := drain[*aas.DescribeScalingPoliciesOutput, aas.Options](ctx, c, ActionDescribeScalingPolicies, pp,
		func(p *aas.DescribeScalingPoliciesOutput) []aastypes.ScalingPolicy { return p.ScalingPolicies })
	if err != nil {
		return nil, err
	}
	return scalableTargetsOf(raw, policies), nil
}

// scalableTargetsOf keeps the IC copy targets, each with its policies, sorted by resource.
func scalableTargetsOf(raw []aastypes.ScalableTarget, policies []aastypes.ScalingPolicy) []ScalableTarget {
	var out []ScalableTarget
	at := map[string]int{}
	for _, r := range raw {
		id := aws.ToString(r.ResourceId)
		ic, ok := strings.CutPrefix(id, "inference-component/")
		if string(r.ScalableDimension) != DimensionCopies || !ok || ic == "" || strings.Contains(ic, "/") {
			continue
		}
		at[id] = len(out)
		out = append(out, ScalableTarget{ResourceID: id, InferenceComponent: ic, Account: AccountOf(aws.ToString(r.ScalableTargetARN)),
			Min: int(aws.ToInt32(r.MinCapacity)), Max: int(aws.ToInt32(r.MaxCapacity))})
	}
	for _, p := range policies {
		i, ok := at[aws.ToString(p.ResourceId)]
		if !ok || string(p.ScalableDimension) != DimensionCopies {
			continue // a policy of a target deregistered meanwhile, or another dimension
		}
		var sp ScalingPolicy
		if tt := p.TargetTrackingScalingPolicyConfiguration; tt != nil {
			sp.Target = aws.ToFloat64(tt.TargetValue)
			switch {
			case tt.PredefinedMetricSpecification != nil:
				sp.Metric = string(tt.PredefinedMetricSpecification.PredefinedMetricType)
			case tt.CustomizedMetricSpecification != nil:
				sp.Metric = aws.ToString(tt.CustomizedMetricSpecification.MetricName)
			}
		}
		out[i].Policies = append(out[i].Policies, sp)
	}
	slices.SortFunc(out, func(a, b ScalableTarget) int { return strings.Compare(a.ResourceID, b.ResourceID) })
	return out
}

// AccountOf is the account id an ARN carries ("" for no ARN or one without an account).
func AccountOf(s string) string {
	a, err := arn.Parse(s)
	if err != nil {
		return ""
	}
	return a.AccountID
}

// ProbeScaling lists one scalable target and one policy: Save & test's check of the
// optional permissions, naming the one denied.
func (c *client) ProbeScaling(ctx context.Context) error {
	ns, one := aastypes.ServiceNamespaceSagemaker, aws.Int32(1)
	_, err := call(ctx, c, ActionDescribeScalableTargets, func(ctx context.Context) (*aas.DescribeScalableTargetsOutput, error) {
		return c.aas.DescribeScalableTargets(ctx, &aas.DescribeScalableTargetsInput{ServiceNamespace: ns, MaxResults: one})
	})
	if err != nil {
		return err
	}
	_, err = call(ctx, c, ActionDescribeScalingPolicies, func(ctx context.Context) (*aas.DescribeScalingPoliciesOutput, error) {
		return c.aas.DescribeScalingPolicies(ctx, &aas.DescribeScalingPoliciesInput{ServiceNamespace: ns, MaxResults: one})
	})
	return err
}
