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

// azInstancesExpr: serving instances per endpoint and AZ over time, each counted for window
// after its last sample. On an IC endpoint these are the instances hosting a copy (their GPUs
// carry the IC): an instance without a copy is sent nothing by design. On other endpoints
// every instance (node series) serves.
func (e *env) azInstancesExpr(window time.Duration) string {
	hosts := func(selector string) string {
		return fmt.Sprintf("count %s (count %s (last_over_time(%s[%s])))", px.By(lEP, lAZ), px.By(lEP, lAZ, lHost), selector, promDur(window))
	}
	withCopies := hosts(e.endpointOnly(semconv.DCGMGPUUtil, lEP, px.Neq(lIC, "")))
	return fmt.Sprintf("%s or (%s unless on (%s) %s)", withCopies, hosts(e.endpointOnly(semconv.NodeMemTotal, lEP)), px.Label(lEP), withCopies)
}

// azTrafficExpr: invocations per endpoint and AZ, one total per step (delta counts).
func (e *env) azTrafficExpr() string {
	return fmt.Sprintf("sum %s (sum_over_time(%s[%s]))",
		px.By(semconv.DimEndpointName, semconv.DimAvailabilityZone), e.endpointOnly(semconv.InvocationsByAzByInstanceType, semconv.DimEndpointName), promDur(e.step))
}

// endpointOnly selects metric on the scope's endpoint alone: AZ placement and traffic are
// properties of the endpoint even when an IC is in scope.
func (e *env) endpointOnly(metric, epLabel string, extra ...string) string {
	if e.scope.Endpoint != "" {
		extra = append([]string{px.Eq(epLabel, e.scope.Endpoint)}, extra...)
	}
	return px.Sel(metric, extra...)
}

// azView is one endpoint's placement and traffic over time: serving instances and
// invocations per AZ at each step that has traffic data.
type azView struct {
	endpoint  string
	azs       []string // every AZ that had serving instances, sorted
	steps     []model.Time
	instances map[string]map[model.Time]float64 // AZ -> step -> serving instances (engine window)
	now       map[string]map[model.Time]float64 // AZ -> step -> serving instances (two steps)
	traffic   map[string]map[model.Time]float64 // AZ -> step -> invocations
}

// azViews reshapes the range results into one view per endpoint that served from two or
// more AZs.
func azViews(instMatrix, nowMatrix, trafficMatrix model.Matrix) []azView {
	views := map[string]*azView{}
	view := func(ep string) *azView {
		if views[ep] == nil {
			views[ep] = &azView{endpoint: ep, instances: map[string]map[model.Time]float64{}, now: map[string]map[model.Time]float64{}, traffic: map[string]map[model.Time]float64{}}
		}
		return views[ep]
	}
	for _, s := range instMatrix {
		v, az := view(label(s.Metric, lEP)), label(s.Metric, lAZ)
		v.instances[az] = pointsOf(s)
	}
	for _, s := range nowMatrix {
		if v := views[label(s.Metric, lEP)]; v != nil {
			v.now[label(s.Metric, lAZ)] = pointsOf(s)
		}
	}
	for _, s := range trafficMatrix {
		v := views[label(s.Metric, semconv.DimEndpointName)]
		if v == nil {
			continue
		}
		az := label(s.Metric, semconv.DimAvailabilityZone)
		if v.traffic[az] == nil {
			v.traffic[az] = map[model.Time]float64{}
		}
		for t, x := range pointsOf(s) {
			v.traffic[az][t] += x
		}
	}
	var out []azView
	for _, v := range views {
		if len(v.instances) < 2 {
			continue // one AZ: nothing to compare
		}
		seen := map[model.Time]bool{}
		for _, pts := range v.traffic {
			for t := range pts {
				if !seen[t] {
					seen[t] = true
					v.steps = append(v.steps, t)
				}
			}
		}
		for az := range v.instances {
			v.azs = append(v.azs, az)
		}
		sort.Strings(v.azs)
		sort.Slice(v.steps, func(i, j int) bool { return v.steps[i] < v.steps[j] })
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].endpoint < out[j].endpoint })
	return out
}

// pointsOf indexes the finite points of a series by time.
func pointsOf(s *model.SampleStream) map[model.Time]float64 {
	out := make(map[model.Time]float64, len(s.Values))
	for _, p := range s.Values {
		if x := float64(p.Value); finite(x) {
			out[p.Timestamp] = x
		}
	}
	return out
}

// shares is, per step, the share of its fair traffic (by serving instances) az received.
// Steps without traffic anywhere, or without serving instances in az, count as fair: no
// traffic is then not an AZ problem.
func (v azView) shares(az string) []model.SamplePair {
	out := make([]model.SamplePair, len(v.steps))
	for i, t := range v.steps {
		total, inst := 0.0, 0.0
		for _, a := range v.azs {
			if n := v.instances[a][t]; n > 0 {
				total += v.traffic[a][t]
				inst += n
			}
		}
		share := 1.0
		if n := v.instances[az][t]; total > 0 && n > 0 && inst > n {
			share = v.traffic[az][t] / n / (total / inst)
		}
		out[i] = model.SamplePair{Timestamp: t, Value: model.SampleValue(share)}
	}
	return out
}

// quieterThanUsual says whether az's instances each got less than share of their own usual
// traffic (the median per instance and step outside the window) during ep. A share of the
// endpoint's traffic falls as well when the other AZs get busier — one IC's surge on an IC
// endpoint — while this AZ serves as much as ever; that is not an AZ without traffic.
// Without two steps outside the window its usual level is unknown, and the share decides.
func (v azView) quieterThanUsual(az string, ep episode, share float64) bool {
	from, to := model.TimeFromUnixNano(ep.from.UnixNano()), model.TimeFromUnixNano(ep.to.UnixNano())
	var in, out []float64
	for _, t := range v.steps {
		n := v.instances[az][t]
		if !(n > 0) {
			continue
		}
		if t >= from && t <= to {
			in = append(in, v.traffic[az][t]/n)
		} else {
			out = append(out, v.traffic[az][t]/n)
		}
	}
	if len(out) < 2 || len(in) == 0 {
		return true
	}
	return mean(in) < share*quantile(out, 0.5)
}

// servedThroughout says whether az had serving instances by the two-step count at every step
// of ep: its copies stayed there, so no traffic is not a copy that just left.
func (v azView) servedThroughout(az string, ep episode) bool {
	from, to := model.TimeFromUnixNano(ep.from.UnixNano()), model.TimeFromUnixNano(ep.to.UnixNano())
	for _, t := range v.steps {
		if t >= from && t <= to && !(v.now[az][t] > 0) {
			return false
		}
	}
	return true
}

// invocations of az over the steps in [from, to].
func (v azView) invocations(az string, from, to model.Time) float64 {
	n := 0.0
	for _, t := range v.steps {
		if t >= from && t <= to {
			n += v.traffic[az][t]
		}
	}
	return n
}

// instancesAt is az's serving instances at the last step at or before t.
func (v azView) instancesAt(az string, t model.Time) float64 {
	best, n := model.Time(-1<<62), 0.0
	for ts, x := range v.instances[az] {
		if ts <= t && ts > best {
			best, n = ts, x
		}
	}
	return n
}

// runAZ: an AZ whose instances served (almost) nothing for a sustained window while the
// other AZs served points to routing or placement (critical); an AZ whose instances each
// serve several times what another AZ's serve is imbalance, a resilience risk rather than a
// cause of latency (info: autoscaling moves IC copies, so it comes and goes).
func runAZ(ctx context.Context, e *env) ([]Finding, error) {
	instQuery, nowQuery, trafficQuery := e.azInstancesExpr(e.window), e.azInstancesExpr(2*e.step), e.azTrafficExpr()
	instMatrix, err := e.matrix(ctx, instQuery)
	if err != nil || len(instMatrix) == 0 {
		return nil, err
	}
	nowMatrix, err := e.matrix(ctx, nowQuery)
	if err != nil {
		return nil, err
	}
	trafficMatrix, err := e.matrix(ctx, trafficQuery)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, v := range azViews(instMatrix, nowMatrix, trafficMatrix) {
		if len(v.steps) < minPoints {
			e.notEnoughData("invocations per AZ of "+v.endpoint, len(v.steps))
			continue
		}
		if f, ok := e.starvedAZ(v, instQuery, trafficQuery); ok {
			out = append(out, f)
		} else if f, ok := e.skewedAZ(v, instQuery, trafficQuery); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// starvedAZ finds the AZ with the longest sustained window without traffic while another
// AZ served.
func (e *env) starvedAZ(v azView, instQuery, trafficQuery string) (Finding, bool) {
	var worst episode
	var az string
	starved := 0
	for _, a := range v.azs {
		ep := longestRun(v.shares(a), true, func(x float64) bool { return x < e.cfg.AZNoTrafficShare })
		// Longer than the instance count's look-back, where a copy that just left an
		// instance still counts for one window; or the fast window when the two-step count
		// shows the copies stayed.
		if !ep.qualifies(e, max(sustain, e.window+e.step), v.servedThroughout(a, ep)) || !v.quieterThanUsual(a, ep, e.cfg.AZNoTrafficShare) {
			continue
		}
		starved++
		if ep.points > worst.points {
			worst, az = ep, a
		}
	}
	if starved == 0 || starved == len(v.azs) {
		return Finding{}, false
	}
	from, to := model.TimeFromUnixNano(worst.from.UnixNano()), model.TimeFromUnixNano(worst.to.UnixNano())
	return Finding{
		Cause:    "AZ with instances but no traffic",
		Target:   Target{Level: LevelAZ, Name: az, Endpoint: v.endpoint, AZ: az},
		Severity: Critical, Score: strength(float64(worst.points), 0, float64(len(v.steps))),
		Summary: fmt.Sprintf("Endpoint %s has %s in %s but they received no traffic %s (%s) while the other AZs served it",
			v.endpoint, plural(v.instancesAt(az, to), "serving instance"), az, worst.when(e), fmtDur(worst.lasting(e))),
		Evidence: []Evidence{
			{What: "serving instances per AZ at " + e.clock(worst.to), Value: v.perAZ(func(a string) float64 { return v.instancesAt(a, to) }), Query: instQuery},
			{What: "invocations per AZ " + worst.when(e), Value: v.perAZ(func(a string) float64 { return v.invocations(a, from, to) }), Query: trafficQuery},
		},
		Next: "Check the routing and the health of the instances in that AZ (failed health checks, network, placement of IC copies); the other AZs carry its load and will queue first.",
	}, true
}

// skewedAZ compares per-instance invocations over the range of the busiest and quietest AZ.
func (e *env) skewedAZ(v azView, instQuery, trafficQuery string) (Finding, bool) {
	first, last := v.steps[0], v.steps[len(v.steps)-1]
	perInst := func(az string) float64 { return v.invocations(az, first, last) / v.instancesAt(az, last) }
	var azs []string
	for _, az := range v.azs {
		if v.instancesAt(az, last) > 0 {
			azs = append(azs, az)
		}
	}
	if len(azs) < 2 {
		return Finding{}, false
	}
	sort.SliceStable(azs, func(i, j int) bool { return perInst(azs[i]) > perInst(azs[j]) })
	hot, cold := azs[0], azs[len(azs)-1]
	if !(perInst(cold) > 0) || perInst(hot)/perInst(cold) < azSkewRatio {
		return Finding{}, false
	}
	ratio := perInst(hot) / perInst(cold)
	return Finding{
		Cause:    "AZ traffic imbalance",
		Target:   Target{Level: LevelAZ, Name: hot, Endpoint: v.endpoint, AZ: hot},
		Severity: Info, Score: strength(ratio, azSkewRatio, 20),
		Summary: fmt.Sprintf("Each instance of %s in %s serves %.1f× the invocations of one in %s", v.endpoint, hot, ratio, cold),
		Evidence: []Evidence{
			{What: "serving instances per AZ now", Value: v.perAZ(func(a string) float64 { return v.instancesAt(a, last) }), Query: instQuery},
			{What: "invocations per AZ over the range", Value: v.perAZ(func(a string) float64 { return v.invocations(a, first, last) }), Query: trafficQuery},
		},
		Next: "Rebalance instances and IC copies across AZs and check the routing; the hot AZ saturates first and one AZ failure would hurt more.",
	}, true
}

// perAZ writes "az1=3, az2=0" in AZ order.
func (v azView) perAZ(f func(az string) float64) string {
	parts := make([]string, len(v.azs))
	for i, az := range v.azs {
		parts[i] = az + "=" + count(f(az))
	}
	return strings.Join(parts, ", ")
}

func plural(n float64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return count(n) + " " + what + "s"
}
