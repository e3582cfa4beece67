package awsapi

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	aas "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
)

// The SageMaker dimensions Application Auto Scaling scales: an inference component's copies
// and a variant's instances.
const (
	DimensionCopies    = string(aastypes.ScalableDimensionSageMakerInferenceComponentDesiredCopyCount)
	DimensionInstances = string(aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount)
)

// ScalableTarget is one registered scalable target of SageMaker with its policies.
type ScalableTarget struct {
	// ResourceID is AWS's: inference-component/<name> or endpoint/<name>/variant/<name>.
	ResourceID string
	Dimension  string // DimensionCopies or DimensionInstances
	// InferenceComponent is set for a DimensionCopies target, Endpoint and Variant for a
	// DimensionInstances one.
	InferenceComponent, Endpoint, Variant string
	Min, Max                              int
	Policies                              []ScalingPolicy
}

// ScalingPolicy is one scaling policy of a target. Target tracking policies carry the
// metric they track and its target value; step scaling ones only their type.
type ScalingPolicy struct {
	Name, Type string // Type: TargetTrackingScaling, StepScaling, PredictiveScaling
	// Metric is the predefined metric type (e.g.
	// SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution) or the customized
	// metric's name (e.g. ConcurrentRequestsPerCopy); "" when the policy tracks none.
	Metric           string
	Target           float64
	ScaleOutCooldown time.Duration
	DisableScaleIn   bool
}

// scalingPerPage is the largest page both Describe calls accept.
const scalingPerPage = 50

// ScalingTargets lists the region's SageMaker scalable targets and attaches their
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

// scalableTargetsOf keeps the SageMaker dimensions the diagnosis judges, each with its
// policies, sorted by resource.
func scalableTargetsOf(raw []aastypes.ScalableTarget, policies []aastypes.ScalingPolicy) []ScalableTarget {
	var out []ScalableTarget
	at := map[string]int{}
	for _, r := range raw {
		dim := string(r.ScalableDimension)
		if dim != DimensionCopies && dim != DimensionInstances {
			continue
		}
		t := ScalableTarget{ResourceID: aws.ToString(r.ResourceId), Dimension: dim,
			Min: int(aws.ToInt32(r.MinCapacity)), Max: int(aws.ToInt32(r.MaxCapacity))}
		if !t.parseResource() {
			continue
		}
		at[t.ResourceID+"\x00"+dim] = len(out)
		out = append(out, t)
	}
	for _, p := range policies {
		i, ok := at[aws.ToString(p.ResourceId)+"\x00"+string(p.ScalableDimension)]
		if !ok {
			continue // a policy of a target deregistered meanwhile, or another dimension
		}
		sp := ScalingPolicy{Name: aws.ToString(p.PolicyName), Type: string(p.PolicyType)}
		if tt := p.TargetTrackingScalingPolicyConfiguration; tt != nil {
			sp.Target = aws.ToFloat64(tt.TargetValue)
			sp.ScaleOutCooldown = time.Duration(aws.ToInt32(tt.ScaleOutCooldown)) * time.Second
			sp.DisableScaleIn = aws.ToBool(tt.DisableScaleIn)
			switch {
			case tt.PredefinedMetricSpecification != nil:
				sp.Metric = string(tt.PredefinedMetricSpecification.PredefinedMetricType)
			case tt.CustomizedMetricSpecification != nil:
				sp.Metric = aws.ToString(tt.CustomizedMetricSpecification.MetricName)
			}
		}
		out[i].Policies = append(out[i].Policies, sp)
	}
	slices.SortFunc(out, func(a, b ScalableTarget) int {
		return strings.Compare(a.ResourceID+"\x00"+a.Dimension, b.ResourceID+"\x00"+b.Dimension)
	})
	return out
}

// parseResource names the IC or the endpoint and variant of the resource id; false for an
// id of neither shape.
func (t *ScalableTarget) parseResource() bool {
	parts := strings.Split(t.ResourceID, "/")
	switch {
	case t.Dimension == DimensionCopies && len(parts) == 2 && parts[0] == "inference-component" && parts[1] != "":
		t.InferenceComponent = parts[1]
		return true
	case t.Dimension == DimensionInstances && len(parts) == 4 && parts[0] == "endpoint" && parts[2] == "variant" && parts[1] != "" && parts[3] != "":
		t.Endpoint, t.Variant = parts[1], parts[3]
		return true
	}
	return false
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
