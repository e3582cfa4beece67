package awsapi

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// scalingFleet answers DescribeScalableTargets and DescribeScalingPolicies for a drawn set
// of SageMaker targets (IC copies, variant instances and a dimension the diagnosis does not
// judge), two per page, and returns what ScalingTargets must make of them: the IC targets
// with the account of their ARN.
func scalingFleet(f *fakeAWS, r *rand.Rand) []ScalableTarget {
	var targets, policies []map[string]any
	var want []ScalableTarget
	account := fmt.Sprintf("%012d", r.IntN(1e12))
	for i := range 2 + r.IntN(9) {
		min, max := 1+r.IntN(3), 4+r.IntN(8)
		id, dim := fmt.Sprintf("inference-component/ic-%02d", i), DimensionCopies
		switch r.IntN(3) {
		case 1: // a variant's instances: not judged, so not listed
			id, dim = fmt.Sprintf("endpoint/ep-%02d/variant/AllTraffic", i), "sagemaker:variant:DesiredInstanceCount"
		case 2: // provisioned concurrency of a serverless variant: not listed
			id, dim = fmt.Sprintf("endpoint/sl-%02d/variant/v", i), "sagemaker:variant:DesiredProvisionedConcurrency"
		}
		targets = append(targets, map[string]any{"ServiceNamespace": "sagemaker", "ResourceId": id, "ScalableDimension": dim,
			"MinCapacity": min, "MaxCapacity": max, "RoleARN": "arn:role", "CreationTime": 1.7e9,
			"ScalableTargetARN": fmt.Sprintf("arn:aws:application-autoscaling:%s:%s:scalable-target/%016x", testRegion, account, i)})
		t := ScalableTarget{ResourceID: id, InferenceComponent: strings.TrimPrefix(id, "inference-component/"), Account: account, Min: min, Max: max}
		for j := range r.IntN(3) {
			p := ScalingPolicy{Target: float64(1 + r.IntN(20))}
			typ, spec := "TargetTrackingScaling", map[string]any{"TargetValue": p.Target, "ScaleOutCooldown": r.IntN(600)}
			switch r.IntN(3) {
			case 0:
				p.Metric = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
				spec["PredefinedMetricSpecification"] = map[string]any{"PredefinedMetricType": p.Metric}
			case 1:
				p.Metric = "ConcurrentRequestsPerCopy"
				spec["CustomizedMetricSpecification"] = map[string]any{"MetricName": p.Metric, "Namespace": "AWS/SageMaker", "Statistic": "Average"}
			default:
				p, typ, spec = ScalingPolicy{}, "StepScaling", nil
			}
			policy := map[string]any{"PolicyName": fmt.Sprintf("p%d-%d", i, j), "PolicyARN": "arn:policy", "PolicyType": typ, "ServiceNamespace": "sagemaker",
				"ResourceId": id, "ScalableDimension": dim, "CreationTime": 1.7e9}
			if spec != nil {
				policy["TargetTrackingScalingPolicyConfiguration"] = spec
			}
			policies = append(policies, policy)
			t.Policies = append(t.Policies, p)
		}
		if dim == DimensionCopies {
			want = append(want, t)
		}
	}
	// A policy whose target was deregistered between the two listings is left out.
	policies = append(policies, map[string]any{"PolicyName": "orphan", "PolicyARN": "arn:orphan", "PolicyType": "TargetTrackingScaling", "ServiceNamespace": "sagemaker",
		"ResourceId": "inference-component/gone", "ScalableDimension": DimensionCopies, "CreationTime": 1.7e9})
	pager := func(key string, items []map[string]any) func(map[string]any) reply {
		return func(in map[string]any) reply {
			if in["ServiceNamespace"] != "sagemaker" {
				f.t.Errorf("%s asked for namespace %v, want sagemaker", key, in["ServiceNamespace"])
			}
			start := 0
			if tok, _ := in["NextToken"].(string); tok != "" {
				fmt.Sscan(tok, &start)
			}
			out := map[string]any{key: items[min(start, len(items)):min(start+2, len(items))]}
			if start+2 < len(items) {
				out["NextToken"] = fmt.Sprint(start + 2)
			}
			return reply{body: out}
		}
	}
	f.aas["DescribeScalableTargets"] = pager("ScalableTargets", targets)
	f.aas["DescribeScalingPolicies"] = pager("ScalingPolicies", policies)
	slices.SortFunc(want, func(a, b ScalableTarget) int { return strings.Compare(a.ResourceID, b.ResourceID) })
	return want
}

// TestScalingTargetsPagesAndJoins: every page of both listings is read, each policy lands on
// its target with its metric and target value, the target carries its ARN's account, other
// dimensions are left out.
func TestScalingTargetsPagesAndJoins(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			f := newFake(t, testRegion)
			want := scalingFleet(f, rand.New(rand.NewPCG(seed, 32)))
			c, _ := newTestClient(t, f, options{})
			got, err := c.ScalingTargets(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if f.count("AnyScaleFrontendService.DescribeScalableTargets") < 1 || f.count("AnyScaleFrontendService.DescribeScalingPolicies") < 1 {
				t.Errorf("calls %v", f.calls)
			}
		})
	}
}

// TestScalingPermissions: a denial of either call is a *PermissionError naming its action
// (Save & test's warning); the probe makes one call asking for one target.
func TestScalingPermissions(t *testing.T) {
	denied := smError(400, "AccessDeniedException", "User: arn:aws:iam::123456789012:user/x is not authorized to perform: application-autoscaling:Describe*")
	for _, action := range []string{ActionDescribeScalableTargets, ActionDescribeScalingPolicies} {
		t.Run(action, func(t *testing.T) {
			f := newFake(t, testRegion)
			scalingFleet(f, rand.New(rand.NewPCG(1, 2)))
			op := strings.TrimPrefix(action, "application-autoscaling:")
			f.aas[op] = func(map[string]any) reply { return denied }
			c, _ := newTestClient(t, f, options{})
			_, err := c.ScalingTargets(context.Background())
			var perm *PermissionError
			if !errors.As(err, &perm) || perm.Action != action {
				t.Fatalf("error %v, want a PermissionError for %s", err, action)
			}
		})
	}
	for _, action := range []string{ActionDescribeScalableTargets, ActionDescribeScalingPolicies} {
		f := newFake(t, testRegion)
		scalingFleet(f, rand.New(rand.NewPCG(1, 2)))
		f.aas[strings.TrimPrefix(action, "application-autoscaling:")] = func(map[string]any) reply { return denied }
		c, _ := newTestClient(t, f, options{})
		if err := c.ProbeScaling(context.Background()); !IsPermission(err) || !strings.Contains(err.Error(), action) {
			t.Errorf("probe with %s denied: %v, want a PermissionError naming it", action, err)
		}
	}
	f := newFake(t, testRegion)
	var asked []any
	for _, op := range []string{"DescribeScalableTargets", "DescribeScalingPolicies"} {
		f.aas[op] = func(in map[string]any) reply {
			asked = append(asked, op, in["MaxResults"])
			return reply{body: map[string]any{"NextToken": "more"}}
		}
	}
	c, _ := newTestClient(t, f, options{})
	api := Cached(c, time.Minute, nil)
	for range 2 {
		if err := api.ProbeScaling(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	one := []any{"DescribeScalableTargets", 1.0, "DescribeScalingPolicies", 1.0}
	if want := append(slices.Clone(one), one...); !reflect.DeepEqual(asked, want) {
		t.Errorf("probes asked %v, want %v (one uncached call of each, for one item)", asked, want)
	}
}
