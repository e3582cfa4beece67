package diagnosis

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// azInstancesExpr: instances per endpoint and AZ now (node series: one set per instance).
func (e *env) azInstancesExpr() string {
	return fmt.Sprintf("count %s (count %s (last_over_time(%s[%s])))",
		px.By(lEP, lAZ), px.By(lEP, lAZ, lHost), e.endpointOnly(semconv.NodeMemTotal, lEP), promDur(e.window))
}

// azTrafficExpr: invocations per endpoint and AZ, one total per step (delta counts).
func (e *env) azTrafficExpr() string {
	return fmt.Sprintf("sum %s (sum_over_time(%s[%s]))",
		px.By(semconv.DimEndpointName, semconv.DimAvailabilityZone), e.endpointOnly(semconv.InvocationsByAzByInstanceType, semconv.DimEndpointName), promDur(e.step))
}

// endpointOnly selects metric on the scope's endpoint alone: AZ placement and traffic are
// properties of the endpoint even when an IC is in scope.
func (e *env) endpointOnly(metric, epLabel string) string {
	if e.scope.Endpoint == "" {
		return metric
	}
	return px.Sel(metric, px.Eq(epLabel, e.scope.Endpoint))
}

// runAZ: an AZ whose instances have served (almost) nothing for the last part of the range
// while the other AZs serve points to routing or placement (critical); an AZ whose instances
// each serve several times what another AZ's serve is imbalance, a resilience risk rather
// than a cause of latency (info: autoscaling moves IC copies, so it comes and goes).
func runAZ(ctx context.Context, e *env) ([]Finding, error) {
	iq, tq := e.azInstancesExpr(), e.azTrafficExpr()
	iv, err := e.instant(ctx, iq)
	if err != nil || len(iv) == 0 {
		return nil, err
	}
	tm, err := e.matrix(ctx, tq)
	if err != nil {
		return nil, err
	}
	instances := map[string]map[string]float64{} // endpoint -> AZ -> count
	for _, s := range iv {
		if v := float64(s.Value); finite(v) && v > 0 {
			ep := label(s.Metric, lEP)
			if instances[ep] == nil {
				instances[ep] = map[string]float64{}
			}
			instances[ep][label(s.Metric, lAZ)] = v
		}
	}
	traffic := map[string]map[string]map[model.Time]float64{} // endpoint -> AZ -> step -> invocations
	steps := map[string]map[model.Time]bool{}
	for _, s := range tm {
		ep, az := label(s.Metric, semconv.DimEndpointName), label(s.Metric, semconv.DimAvailabilityZone)
		if traffic[ep] == nil {
			traffic[ep], steps[ep] = map[string]map[model.Time]float64{}, map[model.Time]bool{}
		}
		traffic[ep][az] = map[model.Time]float64{}
		for _, p := range s.Values {
			if v := float64(p.Value); finite(v) {
				traffic[ep][az][p.Timestamp] = v
				steps[ep][p.Timestamp] = true
			}
		}
	}
	var out []Finding
	for ep, azs := range instances {
		if len(azs) < 2 || len(steps[ep]) == 0 {
			continue // one AZ, or no traffic data: nothing to compare
		}
		ts := make([]model.Time, 0, len(steps[ep]))
		for t := range steps[ep] {
			ts = append(ts, t)
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		names := make([]string, 0, len(azs))
		inst := 0.0
		for az, n := range azs {
			names = append(names, az)
			inst += n
		}
		sort.Strings(names)
		// share of its fair traffic each AZ got at each step
		share := func(az string, t model.Time) float64 {
			total := 0.0
			for a := range azs {
				total += traffic[ep][a][t]
			}
			if total <= 0 {
				return 1 // no traffic anywhere is not an AZ problem
			}
			return traffic[ep][az][t] / azs[az] / (total / inst)
		}
		recent := ts[len(ts)-max(3, len(ts)/4):]
		sums := func(at []model.Time) func(string) float64 {
			return func(az string) float64 {
				n := 0.0
				for _, t := range at {
					n += traffic[ep][az][t]
				}
				return n
			}
		}
		recentSum := sums(recent)
		dist := func(f func(string) string) string {
			parts := make([]string, len(names))
			for i, az := range names {
				parts[i] = az + "=" + f(az)
			}
			return strings.Join(parts, ", ")
		}
		ev := []Evidence{
			{What: "instances per AZ", Value: dist(func(az string) string { return count(azs[az]) }), Query: iq},
			{What: fmt.Sprintf("invocations per AZ, last %s", fmtDur(time.Duration(len(recent))*e.step)), Value: dist(func(az string) string { return count(recentSum(az)) }), Query: tq},
		}
		var starved []string
		since, runs := map[string]model.Time{}, map[string]int{}
		for _, az := range names {
			run := 0
			for i := len(ts) - 1; i >= 0 && share(az, ts[i]) < e.cfg.AZNoTrafficShare; i-- {
				run++
			}
			if run >= len(recent) {
				starved = append(starved, az)
				since[az], runs[az] = ts[len(ts)-run], run
			}
		}
		if len(starved) > 0 && len(starved) < len(names) {
			az := starved[0]
			out = append(out, Finding{
				Cause:    "AZ with instances but no traffic",
				Target:   Target{Level: LevelAZ, Name: az, Endpoint: ep, AZ: az},
				Severity: Critical, Score: strength(float64(runs[az]), 0, float64(len(ts))),
				Summary: fmt.Sprintf("Endpoint %s has %s in %s but they have received no traffic since %s while the other AZs serve it",
					ep, plural(azs[az], "instance"), strings.Join(starved, ", "), since[az].Time().UTC().Format("15:04")),
				Evidence: ev,
				Next:     "Check the routing and the health of the instances in that AZ (failed health checks, network, placement of IC copies); the other AZs carry its load and will queue first.",
			})
			continue
		}
		// Imbalance over the recent part: per-instance invocations of the busiest vs quietest AZ.
		perInst := func(az string) float64 { return recentSum(az) / azs[az] }
		sort.Slice(names, func(i, j int) bool { return perInst(names[i]) > perInst(names[j]) })
		hot, cold := names[0], names[len(names)-1]
		if perInst(cold) <= 0 || perInst(hot) <= 0 {
			continue
		}
		if ratio := perInst(hot) / perInst(cold); ratio >= e.cfg.AZSkewRatio {
			out = append(out, Finding{
				Cause:    "AZ traffic imbalance",
				Target:   Target{Level: LevelAZ, Name: hot, Endpoint: ep, AZ: hot},
				Severity: Info, Score: strength(ratio, e.cfg.AZSkewRatio, 20),
				Summary:  fmt.Sprintf("Each instance of %s in %s serves %.1f× the invocations of one in %s", ep, hot, ratio, cold),
				Evidence: ev,
				Next:     "Rebalance instances and IC copies across AZs and check the routing; the hot AZ saturates first and one AZ failure would hurt more.",
			})
		}
	}
	return out, nil
}

func plural(n float64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return count(n) + " " + what + "s"
}
