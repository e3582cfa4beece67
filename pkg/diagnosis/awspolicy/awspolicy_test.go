package awspolicy

import (
	"reflect"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

const icConcurrency = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"

// TestPoliciesOf: each IC's target is the concurrency policy's (the lowest of several),
// another metric's only when none tracks concurrency; variants are not ICs; copies come
// from the inventory or stay unknown.
func TestPoliciesOf(t *testing.T) {
	tt := func(metric string, target float64) awsapi.ScalingPolicy {
		return awsapi.ScalingPolicy{Type: "TargetTrackingScaling", Metric: metric, Target: target}
	}
	ic := func(name string, ps ...awsapi.ScalingPolicy) awsapi.ScalableTarget {
		return awsapi.ScalableTarget{ResourceID: "inference-component/" + name, Dimension: awsapi.DimensionCopies, InferenceComponent: name, Min: 1, Max: 6, Policies: ps}
	}
	targets := []awsapi.ScalableTarget{
		ic("one", tt(icConcurrency, 8)),
		ic("two", tt("SageMakerInferenceComponentInvocationsPerCopy", 50), tt(icConcurrency, 12), tt("ConcurrentRequestsPerCopy", 10)),
		ic("invocations", tt("SageMakerInferenceComponentInvocationsPerCopy", 50)),
		ic("step", awsapi.ScalingPolicy{Type: "StepScaling"}),
		{ResourceID: "endpoint/e/variant/v", Dimension: awsapi.DimensionInstances, Endpoint: "e", Variant: "v", Min: 1, Max: 2, Policies: []awsapi.ScalingPolicy{tt("SageMakerVariantInvocationsPerInstance", 70)}},
	}
	got := policiesOf(targets, map[string]int{"one": 3, "step": 1})
	want := map[string]diagnosis.Policy{
		"one":         {Metric: icConcurrency, Target: 8, Min: 1, Max: 6, Copies: 3},
		"two":         {Metric: "ConcurrentRequestsPerCopy", Target: 10, Min: 1, Max: 6, Copies: -1},
		"invocations": {Metric: "SageMakerInferenceComponentInvocationsPerCopy", Target: 50, Min: 1, Max: 6, Copies: -1},
		"step":        {Min: 1, Max: 6, Copies: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	for name, concurrency := range map[string]bool{"one": true, "two": true, "invocations": false, "step": false} {
		if got[name].TracksConcurrency() != concurrency {
			t.Errorf("%s tracks concurrency: %v, want %v", name, !concurrency, concurrency)
		}
	}
}
