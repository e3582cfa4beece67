// Package awspolicy reads diagnosis' autoscaling policies and changes from AWS (Application
// Auto Scaling, the SageMaker inventory and CloudTrail, through pkg/awsapi). It is apart from pkg/diagnosis so that
// diagnosis, and the dashboards generator that reads its thresholds, link no AWS SDK.
package awspolicy

import (
	"context"
	"slices"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

// Source reads the policies through api (Application Auto Scaling) and the ICs' copies
// from its inventory, as of now() (the emulator's clock in the rig); an inventory that cannot
// be read leaves the copies unknown, and why.
func Source(api awsapi.API, now func() time.Time) diagnosis.PolicySource {
	return func(ctx context.Context) (*diagnosis.Policies, error) {
		targets, err := api.ScalingTargets(ctx)
		if err != nil {
			return nil, err
		}
		copies := map[diagnosis.ICKey]int{}
		inv, err := api.Inventory(ctx)
		if err == nil {
			for _, ep := range inv.Endpoints {
				for _, ic := range ep.Components {
					copies[diagnosis.ICKey{Account: awsapi.AccountOf(ic.ARN), IC: ic.Name}] = ic.DesiredCopies
				}
			}
			err = inv.ComponentsErr
		}
		p := policiesOf(targets, copies)
		p.CopiesAt, p.CopiesErr = now(), err
		return p, nil
	}
}

// policiesOf keeps the ICs' targets; of several concurrency policies on one IC the lowest
// target scales out first, so it is the one that counts.
func policiesOf(targets []awsapi.ScalableTarget, copies map[diagnosis.ICKey]int) *diagnosis.Policies {
	out := &diagnosis.Policies{ICs: map[diagnosis.ICKey]diagnosis.Policy{}}
	for _, t := range targets {
		k := diagnosis.ICKey{Account: t.Account, IC: t.InferenceComponent}
		if t.Account != "" && !slices.Contains(out.Own, t.Account) {
			out.Own = append(out.Own, t.Account)
		}
		p := diagnosis.Policy{Min: t.Min, Max: t.Max, Copies: -1}
		if n, ok := copies[k]; ok {
			p.Copies = n
		}
		for _, sp := range t.Policies {
			c := diagnosis.Policy{Metric: sp.Metric, Target: sp.Target}
			better := c.TracksConcurrency() && (!p.TracksConcurrency() || c.Target < p.Target)
			if better || (p.Target == 0 && c.Target > 0) {
				p.Metric, p.Target = c.Metric, c.Target
			}
		}
		out.ICs[k] = p
	}
	return out
}

// Changes reads diagnosis' changes through l (CloudTrail's event history); its error, such
// as cloudtrail:LookupEvents denied, is the rule's to report.
func Changes(l awsapi.ChangeLister) diagnosis.ChangeSource {
	return func(ctx context.Context, from, to time.Time) ([]changes.Change, error) {
		cl, err := l.Changes(ctx, awsapi.ChangeQuery{From: from, To: to})
		return cl.Changes, err
	}
}
