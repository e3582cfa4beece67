package diagnosis

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// The cross-region ICE rule: an instance type exhausted in every AZ of one region while
// another region of the same query still has it. The region's own ICE finding says "the
// region is out of this type"; this one says where to go, so it ranks just above it.
const (
	crossRegionRuleID   = "ice-cross-region"
	crossRegionPriority = 86 // the ICE rule's 85, plus where the capacity is
	causeCrossRegionICE = "ICE in every AZ while another region has capacity"
)

// regionCapacity is what the cross-region rule knows of one region that answered.
type regionCapacity struct {
	region     string
	ice        *iceData
	known      bool // the AZs in use and the scale-outs were read: it can be the other region
	scaleOuts  int  // ScaleOut events in the range
	scaleQuery string
}

// crossRegion reads each answered region's ICE picture (the ICE rule's queries, answered
// from each region's memo) and, only when some region is out of a type in every AZ, every
// region's AZs in use and scale-outs, the regions in parallel; then judges. A region whose
// ICE cannot be read is left out (that is the ICE rule's failure row already); one whose AZs
// or scale-outs cannot be read cannot be the region with capacity, and is this rule's
// failure row for that region.
func crossRegion(ctx context.Context, runs []regionRun, start, end time.Time) (fs []Finding, failures []RuleFailure) {
	defer panics.Recover(func(p *panics.Error) { fs, failures = nil, []RuleFailure{ruleFailure(crossRegionRuleID, p)} })
	caps := make([]*regionCapacity, len(runs))
	anyExhausted := false
	for i, run := range runs {
		d, err := run.e.readICE(ctx)
		if err != nil {
			continue
		}
		caps[i] = &regionCapacity{region: run.name, ice: d, scaleQuery: run.e.scalingEventsExpr()}
		for it := range d.types {
			anyExhausted = anyExhausted || d.exhausted(it)
		}
	}
	if !anyExhausted {
		return nil, nil
	}
	errs := fanout.Each(ctx, 0, runs, func(ctx context.Context, i int, run regionRun) error {
		if caps[i] == nil {
			return nil
		}
		return run.e.readCapacity(ctx, caps[i])
	})
	for i, err := range errs {
		if caps[i] == nil {
			continue
		}
		if err != nil {
			f := ruleFailure(crossRegionRuleID, err)
			f.Region = runs[i].name
			failures = append(failures, f)
			continue
		}
		caps[i].known = true
	}
	var ok []regionCapacity
	for _, c := range caps {
		if c != nil {
			ok = append(ok, *c)
		}
	}
	fs = judgeCrossRegion(ok)
	for i := range fs {
		fs[i].PanelLink = regionLink(panelLink(panelICE, fs[i].Target, start, end), fs[i].Region)
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i].Region < failures[j].Region })
	return fs, failures
}

// readCapacity adds the AZs in use (when the ICE rule did not need them) and the scale-outs.
// It writes c only when both were read, so a failed region's picture stays as the ICE rule saw it.
func (e *env) readCapacity(ctx context.Context, c *regionCapacity) error {
	azs := c.ice
	if len(c.ice.types) == 0 {
		azs = &iceData{azs: map[string]bool{}, azQuery: c.ice.azQuery}
		if err := e.readAZs(ctx, azs); err != nil {
			return err
		}
	}
	m, err := e.matrix(ctx, c.scaleQuery)
	if err != nil {
		return err
	}
	c.ice.azs, c.scaleOuts = azs.azs, countScaleOuts(m, e.step)
	return nil
}

// countScaleOuts counts the ScaleOut events of the scaling rule's events query.
func countScaleOuts(m model.Matrix, step time.Duration) int {
	n := 0
	for _, s := range m {
		if label(s.Metric, semconv.LabelScalingDirection) == semconv.ScaleOut {
			n += len(eventsOf(s, step))
		}
	}
	return n
}

// judgeCrossRegion: for each region and instance type with ICE in every AZ (two or more),
// the other regions that have capacity for that type: an AZ of theirs without ICE for it,
// or, when they met no ICE for it at all, scale-outs that succeeded. A region with no AZ in
// sight and no scale-out shows nothing either way and is left out. Pure.
func judgeCrossRegion(caps []regionCapacity) []Finding {
	var out []Finding
	for _, r := range caps {
		for _, it := range sortedKeys(r.ice.types) {
			if !r.ice.exhausted(it) {
				continue
			}
			var with []capacityIn
			for _, s := range caps {
				if s.region == r.region || !s.known {
					continue
				}
				if c, ok := capacityFor(s, it); ok {
					with = append(with, c)
				}
			}
			if len(with) == 0 {
				continue
			}
			out = append(out, crossRegionFinding(r, it, with))
		}
	}
	return out
}

// capacityIn is another region's capacity for an instance type.
type capacityIn struct {
	regionCapacity
	hit, free []string
}

func capacityFor(s regionCapacity, it string) (capacityIn, bool) {
	hit, free := s.ice.split(it)
	c := capacityIn{regionCapacity: s, hit: hit, free: free}
	return c, len(free) > 0 || (len(hit) == 0 && s.scaleOuts > 0)
}

// better: no ICE for the type at all, then more scale-outs, then more free AZs, then name.
func (c capacityIn) better(o capacityIn) bool {
	if (len(c.hit) == 0) != (len(o.hit) == 0) {
		return len(c.hit) == 0
	}
	if c.scaleOuts != o.scaleOuts {
		return c.scaleOuts > o.scaleOuts
	}
	if len(c.free) != len(o.free) {
		return len(c.free) > len(o.free)
	}
	return c.region < o.region
}

// what says in words what the region has for the type.
func (c capacityIn) what(it string) string {
	var parts []string
	switch {
	case len(c.hit) == 0 && len(c.free) > 0:
		parts = append(parts, fmt.Sprintf("no ICE for %s in any of its %d AZs", it, len(c.free)))
	case len(c.hit) == 0:
		parts = append(parts, fmt.Sprintf("no ICE for %s", it))
	default:
		parts = append(parts, fmt.Sprintf("ICE for %s only in %s, none in %s", it, strings.Join(c.hit, ", "), strings.Join(c.free, ", ")))
	}
	if c.scaleOuts > 0 {
		parts = append(parts, fmt.Sprintf("%d scale-outs succeeded", c.scaleOuts))
	}
	return strings.Join(parts, "; ")
}

func crossRegionFinding(r regionCapacity, it string, with []capacityIn) Finding {
	sort.Slice(with, func(i, j int) bool { return with[i].better(with[j]) })
	ts := r.ice.types[it]
	hit, _ := r.ice.split(it)
	t, eps := ts.target(it)
	names := make([]string, len(with))
	ev := []Evidence{
		{What: "ICE errors per AZ in " + r.region, Value: strings.Join(hit, ", "), Query: r.ice.query},
		{What: "endpoints affected in " + r.region, Value: strings.Join(eps, ", "), Query: r.ice.query},
	}
	for i, c := range with {
		names[i] = c.region
		ev = append(ev, Evidence{What: "capacity in " + c.region, Value: c.what(it), Query: c.ice.query})
		if c.scaleOuts > 0 {
			ev = append(ev, Evidence{What: "scale-outs in " + c.region, Value: fmt.Sprintf("%d", c.scaleOuts), Query: c.scaleQuery})
		}
	}
	has := "has"
	if len(names) > 1 {
		has = "have"
	}
	best := with[0]
	return Finding{
		Rule: crossRegionRuleID, Region: r.region, Cause: causeCrossRegionICE, Target: t, Severity: Critical,
		Score: crossRegionPriority + 10*strength(ts.total, 0, 50),
		Summary: fmt.Sprintf("%s insufficient-capacity errors for %s in all %d AZs of %s, while %s %s capacity (%s: %s)",
			count(ts.total), it, len(hit), r.region, strings.Join(names, ", "), has, best.region, best.what(it)),
		Evidence: ev,
		Next: fmt.Sprintf("Shift traffic to %s (route more requests to its endpoints) or add capacity there (raise its endpoints' instance counts or max copies) while %s is out of %s; in %s itself only another instance type or reserved capacity helps.",
			best.region, r.region, it, r.region),
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
