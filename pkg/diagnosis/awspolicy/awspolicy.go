// Package awspolicy reads diagnosis' autoscaling policies from AWS (Application Auto Scaling
// and the SageMaker inventory, through pkg/awsapi). It is apart from pkg/diagnosis so that
// diagnosis, and the dashboards generator that reads its thresholds, link no AWS SDK.
package awspolicy

import (
	"context"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

// Source reads the policies through api (Application Auto Scaling) and the ICs' copies
// from its inventory; an inventory that cannot be read leaves the copies unknown.
func Source(api awsapi.API) diagnosis.PolicySource {
	return func(ctx context.Context) (map[string]diagnosis.Policy, error) {
		targets, err := api.ScalingTargets(ctx)
		if err != nil {
			return nil, err
		}
		copies := map[string]int{}
		if inv, err := api.Inventory(ctx); err == nil {
			for _, ep := range inv.Endpoints {
				for _, ic := range ep.Components {
					copies[ic.Name] = ic.DesiredCopies
				}
			}
		}
		return policiesOf(targets, copies), nil
	}
}

// policiesOf keeps the ICs' targets; of several concurrency policies on one IC the lowest
// target scales out first, so it is the one that counts.
func policiesOf(targets []awsapi.ScalableTarget, copies map[string]int) map[string]diagnosis.Policy {
	out := map[string]diagnosis.Policy{}
	for _, t := range targets {
		if t.Dimension != awsapi.DimensionCopies {
			continue
		}
		p := diagnosis.Policy{Min: t.Min, Max: t.Max, Copies: -1}
		if n, ok := copies[t.InferenceComponent]; ok {
			p.Copies = n
		}
		for _, sp := range t.Policies {
			c := diagnosis.Policy{Metric: sp.Metric, Target: sp.Target}
			better := c.TracksConcurrency() && (!p.TracksConcurrency() || c.Target < p.Target)
			if better || (p.Target == 0 && c.Target > 0) {
				p.Metric, p.Target = c.Metric, c.Target
			}
		}
		out[t.InferenceComponent] = p
	}
	return out
}
