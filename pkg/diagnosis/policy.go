package diagnosis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
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

// Policies are the ICs' autoscaling as one account's credentials read it. Application Auto
// Scaling answers only for the caller's own account, so an IC of another account (a source
// account of cross-account observability) has a policy this read cannot see.
type Policies struct {
	ICs map[ICKey]Policy
	// Own are the accounts the read covers: those of the targets' ARNs (the caller's). Empty
	// when there is no target at all: which account the read covers is then unknown.
	Own []string
	// CopiesAt is when the copies were read: they are the copies of that moment.
	CopiesAt time.Time
	// CopiesErr is why the copies could not be read (the inventory's error); nil when read.
	CopiesErr error
}

// ICKey names an IC across accounts: two accounts may use one name.
type ICKey struct{ Account, IC string }

// of is ic's policy in account acct: registered when it has a scalable target, readable when
// the read covers its account. A series without an account label is taken for the caller's
// (a single-account setup), its IC found by name.
func (p *Policies) of(acct, ic string) (pol Policy, registered, readable bool) {
	if p == nil {
		return Policy{}, false, false
	}
	if acct == "" {
		for k, pol := range p.ICs {
			if k.IC == ic {
				return pol, true, true
			}
		}
		return Policy{}, false, true
	}
	if !slices.Contains(p.Own, acct) {
		return Policy{}, false, false
	}
	pol, registered = p.ICs[ICKey{acct, ic}]
	return pol, registered, true
}

// PolicySource reads the current autoscaling of a region's ICs (pkg/diagnosis/awspolicy
// reads it from AWS). It is asked once per run, by
// the scaling rule; its error (a missing permission) leaves the rule to judge without the
// policies.
type PolicySource func(ctx context.Context) (*Policies, error)

// unreadable says why acct's policies are not in the read, for the report's warnings.
func (p *Policies) unreadable(acct string) string {
	if len(p.Own) == 0 {
		return fmt.Sprintf("Application Auto Scaling returned no scalable target, so whether account %s is this data source's own (whose policies it reads) is unknown", acct)
	}
	return fmt.Sprintf("autoscaling policies of account %s are not readable with this data source's credentials (Application Auto Scaling answers only for the caller's own account, %s)", acct, strings.Join(p.Own, ", "))
}

// readPolicies reads the region's policies once per run (the scaling and the queueing rule
// ask); nil when there is no source or it failed, which the report says: the rules then
// infer the limit from the load.
func (e *env) readPolicies(ctx context.Context) *Policies {
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

// policyTarget is the IC's policy target when the policy tracks concurrency per copy. The
// caller knows the IC by name only: a name two accounts share may give either's.
func (e *env) policyTarget(ctx context.Context, ic string) (float64, bool) {
	p, _, _ := e.readPolicies(ctx).of("", ic)
	return p.Target, p.TracksConcurrency()
}
