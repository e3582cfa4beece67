package diagnosis

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// runICE: ICE for one instance type in every AZ means the region is out of that type
// (critical: change type); ICE in some AZs only is local (warning: spread over AZs).
func runICE(ctx context.Context, e *env) ([]Finding, error) {
	q := e.iceExpr()
	v, err := e.instant(ctx, q)
	if err != nil || len(v) == 0 {
		return nil, err
	}
	type typeStat struct {
		azs       map[string]float64
		endpoints map[string]bool
		total     float64
	}
	types := map[string]*typeStat{}
	for _, s := range v {
		n := float64(s.Value)
		if !finite(n) || n <= 0 {
			continue
		}
		it := label(s.Metric, semconv.LabelEventInstanceType)
		if types[it] == nil {
			types[it] = &typeStat{azs: map[string]float64{}, endpoints: map[string]bool{}}
		}
		ts := types[it]
		ts.azs[label(s.Metric, semconv.LabelEventAZ)] += n
		ts.endpoints[label(s.Metric, lEP)] = true
		ts.total += n
	}
	if len(types) == 0 {
		return nil, nil
	}
	aq := e.regionAZExpr()
	av, err := e.instant(ctx, aq)
	if err != nil {
		return nil, err
	}
	region := map[string]bool{}
	for _, s := range av {
		region[label(s.Metric, lAZ)] = true
	}
	var out []Finding
	for _, ts := range types {
		for az := range ts.azs {
			region[az] = true
		}
	}
	for it, ts := range types {
		var hit, missing []string
		for az := range region {
			if ts.azs[az] > 0 {
				hit = append(hit, fmt.Sprintf("%s=%s", az, count(ts.azs[az])))
			} else {
				missing = append(missing, az)
			}
		}
		sort.Strings(hit)
		sort.Strings(missing)
		eps := make([]string, 0, len(ts.endpoints))
		for ep := range ts.endpoints {
			eps = append(eps, ep)
		}
		sort.Strings(eps)
		t := Target{Level: LevelInstanceType, Name: it}
		if len(eps) == 1 {
			t.Endpoint = eps[0]
		}
		ev := []Evidence{
			{What: "ICE errors per AZ", Value: strings.Join(hit, ", "), Query: q},
			{What: "AZs in use by the fleet", Value: fmt.Sprintf("%d", len(region)), Query: aq},
			{What: "endpoints affected", Value: strings.Join(eps, ", "), Query: q},
		}
		if len(missing) == 0 && len(hit) == 1 {
			// The fleet launches in one AZ only: no capacity anywhere it can place instances,
			// though the region may have some elsewhere.
			out = append(out, Finding{
				Cause: "ICE in the only AZ in use", Target: t, Severity: Critical, Score: strength(ts.total, 0, 50),
				Summary:  fmt.Sprintf("%s insufficient-capacity errors for %s in %s, the only AZ the fleet uses: it cannot get this type anywhere it places instances", count(ts.total), it, strings.Join(hit, ", ")),
				Evidence: ev,
				Next:     "Let the endpoint place instances in more AZs (subnets in other AZs), or add a second instance type; retrying in the same AZ will not help.",
			})
			continue
		}
		if len(missing) == 0 {
			out = append(out, Finding{
				Cause: "ICE: instance type exhausted in every AZ", Target: t, Severity: Critical, Score: strength(ts.total, 0, 50),
				Summary:  fmt.Sprintf("%s insufficient-capacity errors for %s in all %d AZs: the region is out of this type", count(ts.total), it, len(hit)),
				Evidence: ev,
				Next:     "Fall back to another instance type (heterogeneous instance pools), another region, or reserved capacity; retrying in another AZ will not help.",
			})
			continue
		}
		out = append(out, Finding{
			Cause: "ICE in some AZs", Target: t, Severity: Warning, Score: strength(ts.total, 0, 50),
			Summary:  fmt.Sprintf("%s insufficient-capacity errors for %s in %s; still available in %s", count(ts.total), it, strings.Join(hit, ", "), strings.Join(missing, ", ")),
			Evidence: ev,
			Next:     "Allow the endpoint to place instances in the other AZs (more subnets), or add a second instance type.",
		})
	}
	return out, nil
}
