package diagnosis

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// hardwareXIDs are XID codes that mean the GPU itself is failing (double-bit ECC, row
// remapping, NVLink, fallen off the bus, uncontained ECC), as opposed to application faults.
var hardwareXIDs = map[int]bool{48: true, 63: true, 64: true, 74: true, 79: true, 92: true, 94: true, 95: true}

// gpuHealthSignals are the per-GPU signals of both GPU rules, answered by one request.
func (e *env) gpuHealthExpr() string {
	g := px.By(lEP, lIC, lHost, semconv.LabelGPU)
	over := func(fn, metric string) string {
		return fmt.Sprintf("max %s (%s(%s[%s]))", g, fn, e.eng(metric), e.rng())
	}
	thermal := e.eng(semconv.DCGMThrottleReasons)
	throttled := fmt.Sprintf("(floor(%s / %d) %% 2 + floor(%s / %d) %% 2) > bool 0", thermal, semconv.ThrottleSWThermal, thermal, semconv.ThrottleHWThermal)
	return tagged(
		[2]string{"xid", over("max_over_time", semconv.DCGMXIDErrors) + " > 0"},
		[2]string{"dbe", over("max_over_time", semconv.DCGMECCDBEVolatile) + " > 0"},
		[2]string{"sbe", "(" + over("max_over_time", semconv.DCGMECCSBEVolatile) + " - " + over("min_over_time", semconv.DCGMECCSBEVolatile) + ") > 0"},
		[2]string{"thermal", fmt.Sprintf("max %s (avg_over_time((%s)[%s:%s])) > 0", g, throttled, e.rng(), promDur(e.step))},
		[2]string{"temp", over("max_over_time", semconv.DCGMGPUTemp)},
	)
}

// gpuSignals are one instance's GPU signals, by GPU index.
type gpuSignals struct {
	metric                      model.Metric
	xid, dbe, sbe, thermal, hot map[string]float64
}

func (e *env) gpuHealth(ctx context.Context) (map[string]*gpuSignals, string, error) {
	q := e.gpuHealthExpr()
	v, err := e.instant(ctx, q)
	if err != nil {
		return nil, q, err
	}
	out := map[string]*gpuSignals{}
	for _, s := range v {
		h := label(s.Metric, lHost)
		if h == "" || !finite(float64(s.Value)) {
			continue
		}
		g := out[h]
		if g == nil {
			g = &gpuSignals{metric: s.Metric, xid: map[string]float64{}, dbe: map[string]float64{}, sbe: map[string]float64{}, thermal: map[string]float64{}, hot: map[string]float64{}}
			out[h] = g
		}
		if label(s.Metric, lIC) != "" {
			g.metric = s.Metric // name the IC whose copy runs on the failing GPU
		}
		gpu := label(s.Metric, semconv.LabelGPU)
		map[string]map[string]float64{"xid": g.xid, "dbe": g.dbe, "sbe": g.sbe, "thermal": g.thermal, "temp": g.hot}[label(s.Metric, tagLabel)][gpu] = float64(s.Value)
	}
	return out, q, nil
}

// perGPU writes "GPU 0: 48, GPU 2: 48" for the GPUs in m, optionally only those keep accepts.
func perGPU(m map[string]float64, format func(float64) string, keep func(float64) bool) string {
	var parts []string
	for gpu, v := range m {
		if keep == nil || keep(v) {
			parts = append(parts, "GPU "+gpu+": "+format(v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func xidCode(v float64) string { return strconv.Itoa(int(v)) }

// runGPUHardware: a hardware XID or an uncorrectable ECC error means the GPU is failing
// (critical: replace the instance); corrected ECC errors that keep rising warn of the same.
func runGPUHardware(ctx context.Context, e *env) ([]Finding, error) {
	sigs, q, err := e.gpuHealth(ctx)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for h, g := range sigs {
		hardware := perGPU(g.xid, xidCode, func(v float64) bool { return hardwareXIDs[int(v)] })
		switch {
		case hardware != "" || len(g.dbe) > 0:
			out = append(out, Finding{
				Cause: "GPU hardware errors (XID, uncorrectable ECC)", Target: instanceTarget(g.metric), Severity: Critical,
				Score:   strength(float64(len(g.dbe)+len(g.xid)), 0, 8),
				Summary: fmt.Sprintf("A GPU of %s reports hardware errors (XID %s; uncorrectable ECC on %d GPU(s)): the copy on it may return errors or run slowly", h, cmp.Or(perGPU(g.xid, xidCode, nil), "none"), len(g.dbe)),
				Evidence: []Evidence{
					{What: "last XID per GPU", Value: cmp.Or(perGPU(g.xid, xidCode, nil), "none"), Query: q},
					{What: "uncorrectable (double-bit) ECC errors", Value: cmp.Or(perGPU(g.dbe, count, nil), "none"), Query: q},
					{What: "corrected ECC errors in the range", Value: cmp.Or(perGPU(g.sbe, count, nil), "none"), Query: q},
				},
				Next: "Drain the instance and replace it (scale in that instance or let SageMaker replace it); XID 48/63/64/79 do not heal in place.",
			})
		case len(g.sbe) > 0:
			out = append(out, Finding{
				Cause: "Corrected GPU memory errors rising", Target: instanceTarget(g.metric), Severity: Warning, Score: 0.3,
				Summary:  fmt.Sprintf("Corrected ECC errors on %s rose in the range (%s): an early sign of a failing GPU", h, perGPU(g.sbe, count, nil)),
				Evidence: []Evidence{{What: "corrected ECC errors in the range", Value: perGPU(g.sbe, count, nil), Query: q}},
				Next:     "Watch the GPU errors panel; plan to replace the instance if the count keeps climbing or an uncorrectable error appears.",
			})
		}
	}
	return out, nil
}

// thermalThrottleShare: a GPU thermally throttled for at least this share of the range is a
// finding (short spikes under a burst are normal).
const thermalThrottleShare = 0.1

// runGPUThermal: a GPU that throttles for heat for a good part of the range decodes slower
// than its siblings; its copy's latency stands out.
func runGPUThermal(ctx context.Context, e *env) ([]Finding, error) {
	sigs, q, err := e.gpuHealth(ctx)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for h, g := range sigs {
		worst := 0.0
		for _, v := range g.thermal {
			worst = max(worst, v)
		}
		if worst < thermalThrottleShare {
			continue
		}
		hot := func(v float64) bool { return v > 0 }
		out = append(out, Finding{
			Cause: "GPU thermal throttling", Target: instanceTarget(g.metric), Severity: Warning, Score: strength(worst, thermalThrottleShare, 1),
			Summary: fmt.Sprintf("A GPU of %s throttled its clocks for heat %s of the range", h, pct(worst)),
			Evidence: []Evidence{
				{What: "share of the range thermally throttled", Value: perGPU(g.thermal, pct, hot), Query: q},
				{What: "hottest GPU temperature (°C)", Value: perGPU(g.hot, count, nil), Query: q},
			},
			Next: "Compare its copy's ITL with its siblings (Performance → Token streaming); if it persists, drain the instance: cooling or the board is failing.",
		})
	}
	return out, nil
}
