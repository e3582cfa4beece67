package diagnosis

import (
	"context"
	"fmt"
	"strings"
)

// Policy is an inference component's autoscaling as Application Auto Scaling has it
// registered: the scalable target's capacity and its target tracking policy.
type Policy struct {
	// Metric is what the target tracking policy tracks (a predefined metric type or a
	// customized metric's name); "" when the IC has a scalable target but no such policy.
	Metric string
	Target float64 // the policy's target value; 0 without a target tracking policy
	// Min and Max are the scalable target's copies.
	Min, Max int
	// Copies is how many copies the IC is set to now (DesiredCopyCount); -1 when unknown.
	Copies int
}

// TracksConcurrency: the policy's target is in the unit of the load the rule reads
// (concurrent requests per copy), so the two compare.
func (p Policy) TracksConcurrency() bool {
	return p.Target > 0 && strings.Contains(p.Metric, "ConcurrentRequestsPerCopy")
}

// PolicySource reads the current autoscaling of a region's ICs, keyed by IC name; an IC
// missing from the map has no scalable target (pkg/diagnosis/awspolicy reads it from AWS). It is asked once per run, by the scaling
// rule; its error (a missing permission) leaves the rule to judge without the policies.
type PolicySource func(ctx context.Context) (map[string]Policy, error)

// readPolicies reads the region's policies once per run (the scaling and the queueing rule
// ask); nil when there is no source or it failed, which the report says: the rules then
// infer the limit from the load.
func (e *env) readPolicies(ctx context.Context) map[string]Policy {
	e.policyOnce.Do(func() {
		if e.policies == nil {
			return
		}
		ps, err := e.policies(ctx)
		if err != nil {
			e.warnings.add(fmt.Sprintf("autoscaling policies could not be read, so overload is judged against %s× each component's usual load instead of its policy's target: %v", num(e.cfg.ScalingRise), err))
			return
		}
		e.policyMap = ps
	})
	return e.policyMap
}

// policyTarget is the IC's policy target when the policy tracks concurrency per copy.
func (e *env) policyTarget(ctx context.Context, ic string) (float64, bool) {
	p := e.readPolicies(ctx)[ic]
	return p.Target, p.TracksConcurrency()
}
