package diagnosis

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// azInstancesExpr: instances per endpoint and AZ (DCGM series carry the IC, so an IC scope
// counts the instances hosting that IC).
func (e *env) azInstancesExpr() string {
	return fmt.Sprintf("count %s (count %s (last_over_time(%s[%s])))", by(lEP, lAZ), by(lEP, lAZ, lHost), e.eng(semconv.DCGMGPUUtil), promDur(e.window))
}

// azTrafficExpr: requests served per endpoint and AZ over the range, from the engines'
// end-to-end latency histograms (their count is the number of requests).
func (e *env) azTrafficExpr() string {
	f := func(m string) string {
		return fmt.Sprintf("histogram_count(increase(%s[%s]))", e.eng(m), e.rng())
	}
	return fmt.Sprintf("sum %s (%s or %s)", by(lEP, lAZ), f(semconv.VLLME2E), f(semconv.SGLangE2E))
}

type azStat struct {
	az        string
	instances float64
	requests  float64
}

// runAZ: an AZ that has instances but (almost) no requests points to routing or placement;
// an AZ whose instances each serve several times what another AZ's serve is imbalance.
func runAZ(ctx context.Context, e *env) ([]Finding, error) {
	iq, tq := e.azInstancesExpr(), e.azTrafficExpr()
	iv, err := e.instant(ctx, iq)
	if err != nil || len(iv) == 0 {
		return nil, err
	}
	tv, err := e.instant(ctx, tq)
	if err != nil {
		return nil, err
	}
	eps := map[string]map[string]*azStat{}
	get := func(ep, az string) *azStat {
		if eps[ep] == nil {
			eps[ep] = map[string]*azStat{}
		}
		if eps[ep][az] == nil {
			eps[ep][az] = &azStat{az: az}
		}
		return eps[ep][az]
	}
	for _, s := range iv {
		if v := float64(s.Value); finite(v) {
			get(label(s.Metric, lEP), label(s.Metric, lAZ)).instances = v
		}
	}
	for _, s := range tv {
		if v := float64(s.Value); finite(v) {
			get(label(s.Metric, lEP), label(s.Metric, lAZ)).requests = v
		}
	}
	var out []Finding
	for ep, azs := range eps {
		var stats []*azStat
		var inst, reqs float64
		for _, a := range azs {
			if a.instances > 0 {
				stats = append(stats, a)
				inst += a.instances
				reqs += a.requests
			}
		}
		if len(stats) < 2 || reqs <= 0 {
			continue // one AZ, or no request data: nothing to compare
		}
		// busiest first
		sort.Slice(stats, func(i, j int) bool {
			return stats[i].requests/stats[i].instances > stats[j].requests/stats[j].instances
		})
		fair := reqs / inst
		dist := azDistribution(stats)
		ev := []Evidence{
			{What: "instances per AZ", Value: dist(func(a *azStat) string { return num(a.instances) }), Query: iq},
			{What: "requests per AZ over the range", Value: dist(func(a *azStat) string { return num(a.requests) }), Query: tq},
		}
		var starved []string
		worstShare := 1.0
		for _, a := range stats {
			share := a.requests / a.instances / fair
			if share < e.cfg.AZNoTrafficShare {
				starved = append(starved, a.az)
				worstShare = min(worstShare, share)
			}
		}
		if len(starved) > 0 {
			az := starved[0]
			out = append(out, Finding{
				Cause:    "AZ with instances but no traffic",
				Target:   Target{Level: LevelAZ, Name: az, Endpoint: ep, AZ: az},
				Severity: Critical, Score: 1 - worstShare,
				Summary: fmt.Sprintf("Endpoint %s has %s in %s but they serve %s of their fair share of requests",
					ep, plural(azs[az].instances, "instance"), strings.Join(starved, ", "), pct(worstShare)),
				Evidence: ev,
				Next:     "Check the routing and the health of the instances in that AZ (failed health checks, network, placement of IC copies); the others carry its load and will queue first.",
			})
			continue
		}
		hot, cold := stats[0], stats[len(stats)-1]
		ratio := (hot.requests / hot.instances) / (cold.requests / cold.instances)
		if ratio >= e.cfg.AZSkewRatio {
			out = append(out, Finding{
				Cause:    "AZ traffic imbalance",
				Target:   Target{Level: LevelAZ, Name: hot.az, Endpoint: ep, AZ: hot.az},
				Severity: Warning, Score: strength(ratio, e.cfg.AZSkewRatio, 20),
				Summary:  fmt.Sprintf("Each instance of %s in %s serves %.1f× the requests of one in %s", ep, hot.az, ratio, cold.az),
				Evidence: ev,
				Next:     "Rebalance instances and IC copies across AZs and check the routing; the hot AZ saturates first and one AZ failure would hurt more.",
			})
		}
	}
	return out, nil
}

// azDistribution formats "az=value" pairs in the stats' order.
func azDistribution(stats []*azStat) func(func(*azStat) string) string {
	return func(f func(*azStat) string) string {
		parts := make([]string, len(stats))
		for i, a := range stats {
			parts[i] = a.az + "=" + f(a)
		}
		return strings.Join(parts, ", ")
	}
}

func plural(n float64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return num(n) + " " + what + "s"
}
