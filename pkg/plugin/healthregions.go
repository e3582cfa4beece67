package plugin

import (
	"context"
	"errors"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/fault"
)

// regionsAtOnce bounds how many regions one health query or inventory lookup reads at once
// (each region's calls are bounded again by pkg/awsapi).
const regionsAtOnce = 4

// eachRegion runs fn on each region's clients, at most regionsAtOnce regions at a time,
// panic-safe; errs[i] is region i's failure: its clients could not be built, it has no
// alarms and inventory client, or fn failed.
func (d *Datasource) eachRegion(ctx context.Context, what string, regions []string, fn func(ctx context.Context, i int, rg *regional) error) []error {
	calls := make([]func() error, len(regions))
	for i, region := range regions {
		calls[i] = func() error {
			rg, err := d.regional(ctx, region)
			if err != nil {
				return err
			}
			if rg.aws == nil {
				return rg.awsErr
			}
			return fn(ctx, i, rg)
		}
	}
	return parallelN(what, regionsAtOnce, calls...)
}

// regionFailure is one region's failed share of a query or lookup.
type regionFailure struct {
	region string
	err    error
}

// explainRegion is explain for a failure in region, so the message names that region.
func (d *Datasource) explainRegion(f regionFailure, action string) fault.Problem {
	c := fault.Context{Region: f.region, Action: action}
	if f.region == d.region {
		c.Endpoint = d.endpoint
	}
	p := fault.Explain(f.err, c)
	p.Message = "region " + f.region + ": " + p.Message
	return p
}

// failRegions gives resp the error of the failed regions, each named with its failure and
// fix; the status and source are the first failure's. The frames of the other regions stay.
func (d *Datasource) failRegions(resp *backend.DataResponse, failures []regionFailure) {
	msgs := make([]string, len(failures))
	var first fault.Problem
	for i, f := range failures {
		p := d.explainRegion(f, "cloudwatch:GetMetricData")
		if i == 0 {
			first = p
		}
		msgs[i] = p.Message
	}
	logDebug("query failed in some regions", "status", int(first.Status), "source", string(first.Source), "error", strings.Join(msgs, "; "))
	resp.Error, resp.Status, resp.ErrorSource = errors.New(strings.Join(msgs, "; ")), first.Status, first.Source
}
