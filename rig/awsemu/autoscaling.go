package awsemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// Application Auto Scaling in awsJson1_1: POST / with X-Amz-Target
// AnyScaleFrontendService.<Op>, signed for "application-autoscaling". Each fleet IC is a
// scalable target (its copies, min_copies..max_copies) with one target tracking policy on
// concurrent requests per copy at its target_concurrency_per_copy, as the simulator scales it
// (5-minute scale-out, 15-minute scale-in cooldowns). Only the ICs of the caller's account
// (the fleet's) are listed, as AWS lists only the caller's own.
const (
	autoScalingTgt  = "AnyScaleFrontendService."
	svcAutoScaling  = "application-autoscaling"
	dimCopies       = "sagemaker:inference-component:DesiredCopyCount"
	scalingMetric   = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
	scalingPageSize = 50 // the API's maximum and default
)

var autoScalingOps = []string{"DescribeScalableTargets", "DescribeScalingPolicies"}

// aasInput is the request of both Describe calls.
type aasInput struct {
	ServiceNamespace  string
	ResourceIds       []string
	ResourceId        string
	ScalableDimension string
	PolicyNames       []string
	MaxResults        *int64
	NextToken         string
}

func (s *Server) serveAutoScaling(c emulator.Call, body []byte) emulator.Response {
	out, aerr := s.autoScaling(c.Operation, body)
	return respondJSON(out, aerr, "InternalServiceException")
}

func (s *Server) autoScaling(op string, body []byte) (any, *apiErr) {
	if !slices.Contains(autoScalingOps, op) {
		return nil, &apiErr{status: http.StatusBadRequest, code: "UnknownOperationException",
			msg: fmt.Sprintf("the emulator does not serve Application Auto Scaling %s; it serves %s", op, strings.Join(autoScalingOps, ", "))}
	}
	var in aasInput
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, &apiErr{status: http.StatusBadRequest, code: "SerializationException", msg: "the request body is not the operation's JSON input: " + err.Error()}
		}
	}
	if in.ServiceNamespace == "" {
		return nil, validation("1 validation error detected: Value null at 'serviceNamespace' failed to satisfy constraint: Member must not be null")
	}
	size, msg := pageSize("MaxResults", in.MaxResults, scalingPageSize, scalingPageSize)
	if msg != "" {
		return nil, validation("%s", msg)
	}
	cur, ok := parseToken(op, in.NextToken)
	if !ok {
		return nil, &apiErr{status: http.StatusBadRequest, code: "InvalidNextTokenException", msg: "the NextToken is not one this operation gave"}
	}
	var targets, policies []map[string]any
	// Only SageMaker has scalable targets here; another namespace has none. AWS answers for
	// the caller's account only: the signing key's owner, the fleet's account (the emulator
	// verifies one key), never a source account of cross-account observability.
	for _, e := range s.endpoints() {
		for _, c := range e.components {
			id := "inference-component/" + c.name
			if accountOfARN(c.arn) != s.cfg.Fleet.Account || in.ServiceNamespace != "sagemaker" || (in.ScalableDimension != "" && in.ScalableDimension != dimCopies) ||
				(len(in.ResourceIds) > 0 && !slices.Contains(in.ResourceIds, id)) || (in.ResourceId != "" && in.ResourceId != id) {
				continue
			}
			created := float64(c.created.Unix())
			targets = append(targets, map[string]any{
				"ServiceNamespace": "sagemaker", "ResourceId": id, "ScalableDimension": dimCopies,
				"MinCapacity": c.minCopies, "MaxCapacity": c.maxCopies, "CreationTime": created,
				"RoleARN":           fmt.Sprintf("arn:aws:iam::%s:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint", accountOfARN(c.arn)),
				"ScalableTargetARN": fmt.Sprintf("arn:aws:application-autoscaling:%s:%s:scalable-target/%s", s.cfg.Fleet.Region, accountOfARN(c.arn), stableID(id)),
				"SuspendedState":    map[string]bool{"DynamicScalingInSuspended": false, "DynamicScalingOutSuspended": false, "ScheduledScalingSuspended": false},
			})
			name := c.name + "-concurrency"
			if len(in.PolicyNames) > 0 && !slices.Contains(in.PolicyNames, name) {
				continue
			}
			policies = append(policies, map[string]any{
				"PolicyName": name, "PolicyType": "TargetTrackingScaling", "ServiceNamespace": "sagemaker",
				"PolicyARN":  fmt.Sprintf("arn:aws:autoscaling:%s:%s:scalingPolicy:%s:resource/sagemaker/%s:policyName/%s", s.cfg.Fleet.Region, accountOfARN(c.arn), stableID(id), id, name),
				"ResourceId": id, "ScalableDimension": dimCopies, "CreationTime": created, "Alarms": []any{},
				"TargetTrackingScalingPolicyConfiguration": map[string]any{
					"TargetValue":                   c.target,
					"PredefinedMetricSpecification": map[string]any{"PredefinedMetricType": scalingMetric},
					"ScaleOutCooldown":              300, "ScaleInCooldown": 900, "DisableScaleIn": false,
				},
			})
		}
	}
	key, items := "ScalableTargets", targets
	if op == "DescribeScalingPolicies" {
		key, items = "ScalingPolicies", policies
	}
	got, next := page(op, items, cur, size)
	out := map[string]any{key: got}
	if got == nil {
		out[key] = []any{}
	}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

// accountOfARN is the account field of a SageMaker ARN.
func accountOfARN(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) < 5 {
		return ""
	}
	return parts[4]
}

// stableID is a resource's id in Application Auto Scaling ARNs: fixed per resource.
func stableID(resource string) string { return fmt.Sprintf("%016x", stableHash(resource)) }
