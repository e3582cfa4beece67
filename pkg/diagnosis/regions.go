package diagnosis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
)

// Region is one region a diagnosis covers: its name (empty when the query names none: the
// data source's default, and the report is Run's, without region columns) and the querier
// that reaches it, or Err when the caller could not build one.
type Region struct {
	Name    string
	Querier Querier
	Err     error
	// Prices is the hourly price of an instance type in the region; nil: no prices, and the
	// rules that need them (idle capacity, an ICE fallback's price) stay silent.
	Prices func(instanceType string) (pricing.Price, error)
	// Policies reads the ICs' autoscaling policies; nil: none, and the scaling rule judges
	// overload against each IC's usual load.
	Policies PolicySource
	// Changes reads the region's management changes; nil: none, and no finding is tied to
	// a change.
	Changes ChangeSource
}

// regionRun is one region's part of a run.
type regionRun struct {
	name     string
	report   Report
	e        *env  // nil when the region had no querier or panicked
	err      error // the region failed as a whole: no querier, scope not found, a panic
	answered bool  // at least one rule could query
}

// RunRegions runs the rules once per region, the regions in parallel (each through its own
// querier, so each region's limits and cache apply), and ranks the findings of all regions
// together; each finding and failure carries its region. With two regions or more the
// cross-region ICE rule runs too. A region that fails as a whole (no querier, the scope has
// no data there, a panic) is one failure of that region; the run errs only on invalid input
// or when every region failed.
func RunRegions(ctx context.Context, regions []Region, scope Scope, start, end time.Time, cfg Config) (Report, error) {
	if len(regions) == 0 {
		return Report{}, errors.New("diagnosis: no region to diagnose: pass at least one Region")
	}
	rules, err := prepare(start, end, cfg)
	if err != nil {
		return Report{}, err
	}
	runs := make([]regionRun, len(regions))
	errs := fanout.Each(ctx, 0, regions, func(ctx context.Context, i int, rg Region) error {
		run := &runs[i]
		switch {
		case rg.Err != nil:
			run.err = rg.Err
		case rg.Querier == nil:
			run.err = errors.New("diagnosis: no querier for this region")
		default:
			rules := runnable(rules, rg.Prices != nil)
			run.report, run.e, run.err = runRegion(ctx, rg, rules, scope, start, end, cfg)
			run.answered = run.err == nil && len(run.report.Failures) < querying(rules)
		}
		return nil
	})
	for i, err := range errs {
		runs[i].name = regions[i].Name
		if err != nil { // a panic, or the caller gave up before the region started
			runs[i] = regionRun{name: regions[i].Name, err: err}
		}
	}

	if allFailedAsAWhole(runs) {
		return Report{}, inRegion(runs[0].name, runs[0].err)
	}
	out := Report{Scope: scope, Start: start, End: end, Findings: []Finding{}}
	var answered []regionRun
	for _, run := range runs {
		if run.name != "" {
			out.Regions = append(out.Regions, run.name)
		}
		if run.answered {
			answered = append(answered, run)
		}
	}
	many := len(regions) > 1
	for _, run := range runs {
		out.merge(run, many)
	}
	if many && runsICE(rules) {
		fs, failures := crossRegion(ctx, answered, start, end)
		out.Findings = append(out.Findings, fs...)
		out.Failures = append(out.Failures, failures...)
	}
	for _, run := range runs {
		if run.e != nil {
			out.Requests += run.e.q.requests() // after the cross-region rule's queries
		}
	}
	out.answered = len(answered)
	Rank(out.Findings)
	return out, nil
}

// allFailedAsAWhole: no region got as far as its rules.
func allFailedAsAWhole(runs []regionRun) bool {
	for _, r := range runs {
		if r.err == nil {
			return false
		}
	}
	return true
}

// merge adds one region's results, each naming the region. With several regions, a region
// whose every rule failed (or that failed as a whole) is one failure, not a row per rule,
// and its warnings say which region they are about.
func (r *Report) merge(run regionRun, many bool) {
	if run.err != nil {
		r.Failures = append(r.Failures, RuleFailure{Region: run.name, Error: run.err.Error(), Err: run.err})
		return
	}
	r.Ran = max(r.Ran, run.report.Ran)
	for _, f := range run.report.Findings {
		f.Region, f.PanelLink = run.name, regionLink(f.PanelLink, run.name)
		r.Findings = append(r.Findings, f)
	}
	if many && !run.answered && len(run.report.Failures) > 0 {
		first := run.report.Failures[0]
		first.Rule, first.Region = "", run.name
		r.Failures = append(r.Failures, first)
	} else {
		for _, f := range run.report.Failures {
			f.Region = run.name
			r.Failures = append(r.Failures, f)
		}
	}
	for _, w := range run.report.Warnings {
		if many {
			w = run.name + ": " + w
		}
		r.Warnings = append(r.Warnings, w)
	}
}

// inRegion names the region in a region's error when the query named one.
func inRegion(region string, err error) error {
	if region == "" {
		return err
	}
	return fmt.Errorf("region %s: %w", region, err)
}

// runsICE: the cross-region rule belongs to the ICE rule and runs when it does.
func runsICE(rules []rule) bool {
	for _, r := range rules {
		if r.id == iceRuleID {
			return true
		}
	}
	return false
}
