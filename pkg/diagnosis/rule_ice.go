package diagnosis

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// iceExpr: ICE errors per endpoint, instance type and AZ over the range (ice_count events are
// sparse samples holding the number of errors).
func (e *env) iceExpr() string {
	// Provisioning errors belong to the endpoint, not to one IC.
	var m []string
	if e.scope.Endpoint != "" {
		m = append(m, px.Eq(lEP, e.scope.Endpoint))
	}
	s := px.Sel(semconv.ICECount, m...)
	return fmt.Sprintf("sum %s (sum_over_time(%s[%s]))", px.By(lEP, semconv.LabelEventInstanceType, semconv.LabelEventAZ), s, e.rng())
}

// regionAZExpr: the AZs the whole fleet runs in: the region's AZs as far as we can see.
func (e *env) regionAZExpr() string {
	return fmt.Sprintf("count %s (last_over_time(%s[%s]))", px.By(lAZ), semconv.DCGMGPUUtil, e.rng())
}

// iceType is what one instance type met: ICE errors per AZ, the endpoints that met them.
type iceType struct {
	azs       map[string]float64
	endpoints map[string]bool
	total     float64
}

// iceData is a region's ICE picture: errors per instance type and AZ, and the region's AZs as
// far as we can see (where the fleet runs, and where ICE was reported).
type iceData struct {
	query, azQuery string
	types          map[string]*iceType
	azs            map[string]bool
}

// newICEData reads the ICE query's answer; readAZs adds the AZs in use.
func newICEData(ice model.Vector) *iceData {
	d := &iceData{types: map[string]*iceType{}, azs: map[string]bool{}}
	for _, s := range ice {
		n := float64(s.Value)
		if !finite(n) || n <= 0 {
			continue
		}
		it, az := label(s.Metric, semconv.LabelEventInstanceType), label(s.Metric, semconv.LabelEventAZ)
		if d.types[it] == nil {
			d.types[it] = &iceType{azs: map[string]float64{}, endpoints: map[string]bool{}}
		}
		ts := d.types[it]
		ts.azs[az] += n
		ts.endpoints[label(s.Metric, lEP)] = true
		ts.total += n
		d.azs[az] = true
	}
	return d
}

// readICE reads the ICE errors and, when there are some, the AZs in use (a region without ICE
// needs no AZ list for its own rule).
func (e *env) readICE(ctx context.Context) (*iceData, error) {
	q := e.iceExpr()
	v, err := e.instant(ctx, q)
	if err != nil {
		return nil, err
	}
	d := newICEData(v)
	d.query, d.azQuery = q, e.regionAZExpr()
	if len(d.types) == 0 {
		return d, nil
	}
	return d, e.readAZs(ctx, d)
}

// readAZs adds the AZs the fleet runs in.
func (e *env) readAZs(ctx context.Context, d *iceData) error {
	av, err := e.instant(ctx, d.azQuery)
	if err != nil {
		return err
	}
	for _, s := range av {
		d.azs[label(s.Metric, lAZ)] = true
	}
	return nil
}

// split sorts the region's AZs for one instance type into those hit ("az=errors") and those
// without ICE.
func (d *iceData) split(it string) (hit, free []string) {
	ts := d.types[it]
	for az := range d.azs {
		if ts != nil && ts.azs[az] > 0 {
			hit = append(hit, fmt.Sprintf("%s=%s", az, count(ts.azs[az])))
		} else {
			free = append(free, az)
		}
	}
	sort.Strings(hit)
	sort.Strings(free)
	return hit, free
}

// exhausted: ICE for the type in every AZ of the region (two or more; one AZ hit is the
// fleet's placement, not the region).
func (d *iceData) exhausted(it string) bool {
	hit, free := d.split(it)
	return len(free) == 0 && len(hit) >= 2
}

// target is the finding's resource for an instance type: with its endpoint when only one met ICE.
func (ts *iceType) target(it string) (Target, []string) {
	eps := make([]string, 0, len(ts.endpoints))
	for ep := range ts.endpoints {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	t := Target{Level: LevelInstanceType, Name: it}
	if len(eps) == 1 {
		t.Endpoint = eps[0]
	}
	return t, eps
}

// runICE: ICE for one instance type in every AZ means the region is out of that type
// (critical: change type); ICE in some AZs only is local (warning: spread over AZs).
func runICE(ctx context.Context, e *env) ([]Finding, error) {
	d, err := e.readICE(ctx)
	if err != nil || len(d.types) == 0 {
		return nil, err
	}
	var out []Finding
	for it, ts := range d.types {
		hit, missing := d.split(it)
		t, eps := ts.target(it)
		ev := []Evidence{
			{What: "ICE errors per AZ", Value: strings.Join(hit, ", "), Query: d.query},
			{What: "AZs in use by the fleet", Value: fmt.Sprintf("%d", len(d.azs)), Query: d.azQuery},
			{What: "endpoints affected", Value: strings.Join(eps, ", "), Query: d.query},
		}
		fbEv, fbNext := e.fallbackPrices(it, d)
		ev = append(ev, fbEv...)
		if len(missing) == 0 && len(hit) == 1 {
			// The fleet launches in one AZ only: no capacity anywhere it can place instances,
			// though the region may have some elsewhere.
			out = append(out, Finding{
				Cause: "ICE in the only AZ in use", Target: t, Severity: Critical, Score: strength(ts.total, 0, 50),
				Summary:  fmt.Sprintf("%s insufficient-capacity errors for %s in %s, the only AZ the fleet uses: it cannot get this type anywhere it places instances", count(ts.total), it, strings.Join(hit, ", ")),
				Evidence: ev,
				Next:     "Let the endpoint place instances in more AZs (subnets in other AZs), or add a second instance type; retrying in the same AZ will not help." + fbNext,
			})
			continue
		}
		if len(missing) == 0 {
			out = append(out, Finding{
				Cause: "ICE: instance type exhausted in every AZ", Target: t, Severity: Critical, Score: strength(ts.total, 0, 50),
				Summary:  fmt.Sprintf("%s insufficient-capacity errors for %s in all %d AZs: the region is out of this type", count(ts.total), it, len(hit)),
				Evidence: ev,
				Next:     "Fall back to another instance type (heterogeneous instance pools), another region, or reserved capacity; retrying in another AZ will not help." + fbNext,
			})
			continue
		}
		out = append(out, Finding{
			Cause: "ICE in some AZs", Target: t, Severity: Warning, Score: strength(ts.total, 0, 50),
			Summary:  fmt.Sprintf("%s insufficient-capacity errors for %s in %s; still available in %s", count(ts.total), it, strings.Join(hit, ", "), strings.Join(missing, ", ")),
			Evidence: ev,
			Next:     "Allow the endpoint to place instances in the other AZs (more subnets), or add a second instance type." + fbNext,
		})
	}
	return out, nil
}
