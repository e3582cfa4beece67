package diagnosis

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// errorKinds are the error signals of the classic metrics, with the IC-level name when one
// exists (model errors are published per endpoint only).
var errorKinds = []struct{ tag, endpoint, ic, label string }{
	{"invocations", semconv.Invocations, semconv.InvocationsForIC, "invocations"},
	{"4xx", semconv.Invocation4XXErrors, semconv.Invocation4XXErrorsForIC, "4xx errors"},
	{"5xx", semconv.Invocation5XXErrors, semconv.Invocation5XXErrorsForIC, "5xx errors"},
	{"model", semconv.InvocationModelErrors, "", "model errors"},
}

// trafficExpr: invocations and errors per endpoint (per IC in IC scope), one total per step.
// The classic metrics are delta: each sample is the count of its interval, so sum_over_time
// over one step counts that step (rate() would be wrong).
func (e *env) trafficExpr() string {
	group, icScope := semconv.DimEndpointName, e.scope.InferenceComponent != ""
	if icScope {
		group = semconv.DimInferenceComponentName
	}
	var parts [][2]string
	for _, k := range errorKinds {
		metric := k.endpoint
		if icScope {
			if k.ic == "" {
				continue
			}
			metric = k.ic
		}
		s := e.classic(metric)
		if icScope { // the ForIc metrics carry no endpoint dimension
			s = px.Sel(metric, px.Eq(semconv.DimInferenceComponentName, e.scope.InferenceComponent))
		}
		parts = append(parts, [2]string{k.tag, fmt.Sprintf("sum %s (sum_over_time(%s[%s]))", px.By(group), s, promDur(e.step))})
	}
	return tagged(parts...)
}

// traffic is the per-step invocations and errors of one endpoint or IC.
type traffic struct {
	name   string // endpoint or IC name
	ic     bool
	series map[string]map[model.Time]float64 // tag -> time -> count
}

func (e *env) traffic(ctx context.Context) (map[string]*traffic, string, error) {
	return e.trafficFrom(ctx, e.start)
}

// trafficFrom is traffic from a time before the range (the change rule's baseline).
func (e *env) trafficFrom(ctx context.Context, from time.Time) (map[string]*traffic, string, error) {
	q := e.trafficExpr()
	m, err := e.matrixFrom(ctx, q, from)
	if err != nil {
		return nil, q, err
	}
	out := map[string]*traffic{}
	icScope := e.scope.InferenceComponent != ""
	for _, s := range m {
		name := label(s.Metric, semconv.DimEndpointName)
		if icScope {
			name = label(s.Metric, semconv.DimInferenceComponentName)
		}
		t := out[name]
		if t == nil {
			t = &traffic{name: name, ic: icScope, series: map[string]map[model.Time]float64{}}
			out[name] = t
		}
		tag := label(s.Metric, tagLabel)
		pts := t.series[tag]
		if pts == nil {
			pts = map[model.Time]float64{}
			t.series[tag] = pts
		}
		for _, p := range s.Values {
			if v := float64(p.Value); finite(v) {
				pts[p.Timestamp] += v
			}
		}
	}
	return out, q, nil
}

// ratioPoint is the errors and invocations of one step.
type ratioPoint struct {
	t            model.Time
	errs, invocs float64
}

// ratios returns the per-step error ratio of kind, in time order, over steps with traffic.
func (t *traffic) ratios(kind string) []ratioPoint {
	inv := t.series["invocations"]
	var out []ratioPoint
	for ts, n := range inv {
		if n > 0 {
			out = append(out, ratioPoint{t: ts, errs: t.series[kind][ts], invocs: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].t < out[j].t })
	return out
}

// errorsNear counts 5xx and model errors within [from, to].
func (t *traffic) errorsNear(from, to time.Time) float64 {
	n := 0.0
	for _, kind := range []string{"5xx", "model"} {
		for ts, v := range t.series[kind] {
			if tt := ts.Time(); !tt.Before(from) && !tt.After(to) {
				n += v
			}
		}
	}
	return n
}

// runErrors: a step whose error ratio is well above the range's usual ratio and above the
// warning level is a spike; 5xx and model errors at the critical level are critical, 4xx
// (the callers' fault) stay warnings.
func runErrors(ctx context.Context, e *env) ([]Finding, error) {
	tr, q, err := e.traffic(ctx)
	if err != nil {
		return nil, err
	}
	var (
		out   []Finding
		queue *engineQueue // read on the first 4xx spike
	)
	for _, t := range tr {
		for _, k := range errorKinds[1:] {
			rs := t.ratios(k.tag)
			if len(rs) == 0 {
				continue
			}
			xs := make([]float64, len(rs))
			worst := 0
			for i, r := range rs {
				xs[i] = r.errs / r.invocs
				if xs[i] > xs[worst] {
					worst = i
				}
			}
			usual := quantile(xs, 0.5)
			peak := xs[worst]
			if peak < errorRateWarn || (usual > 0 && peak < errorSpikeRatio*usual) || !beyondChance(rs[worst], usual, e.cfg.ErrorMinCount) {
				continue
			}
			sev := Warning
			if k.tag != "4xx" && peak >= e.cfg.ErrorRateCrit {
				sev = Critical
			}
			target := Target{Level: LevelEndpoint, Name: t.name, Endpoint: t.name}
			if t.ic {
				target = Target{Level: LevelIC, Name: t.name, Endpoint: e.scope.Endpoint, InferenceComponent: t.name}
			}
			at := rs[worst].t.Time().UTC()
			cause, rejected := "Error-rate spike ("+k.label+")", false
			if k.tag == "4xx" {
				if queue == nil {
					q, err := e.engineQueue(ctx)
					if err != nil {
						return nil, err
					}
					queue = &q
				}
				if rejected = queue.waitingAt(t, at) >= e.cfg.WaitingRequests; rejected {
					// The engine turning requests away while they queue: a symptom of the
					// saturation, evidence of its finding (foldRejections), not a cause.
					cause, sev = "Error-rate spike (4xx errors) while requests wait in the engine", Info
				}
			}
			out = append(out, Finding{
				Cause: cause, Target: target, Severity: sev, Score: strength(peak, errorRateWarn, 1), rejections: rejected,
				Summary: fmt.Sprintf("%s of %s reached %s of invocations at %s (usually %s)",
					k.label, t.name, pctPts(100*peak), at.Format("15:04"), pctPts(100*usual)),
				Evidence: []Evidence{
					{What: "peak " + k.label + " ratio", Value: fmt.Sprintf("%s (%s of %s invocations in %s)", pctPts(100*peak), count(rs[worst].errs), count(rs[worst].invocs), fmtDur(e.step)), Query: q},
					{What: "usual (median) ratio over the range", Value: pctPts(100 * usual), Query: q},
				},
				Next: errorAdvice(k.tag),
			})
		}
	}
	return out, nil
}

// waitingAt is the most requests waiting, on average over the engine window, in any copy of
// the endpoint or IC t at the step ending at.
func (q engineQueue) waitingAt(t *traffic, at time.Time) float64 {
	worst := 0.0
	for k, s := range q.waiting {
		ep, ic, _ := strings.Cut(k, "\x00")
		if (t.ic && ic != t.name) || (!t.ic && ep != t.name) {
			continue
		}
		for _, p := range s.Values {
			if p.Timestamp.Time().Equal(at) && finite(float64(p.Value)) {
				worst = max(worst, float64(p.Value))
			}
		}
	}
	return worst
}

// foldRejections moves each 4xx spike taken while requests waited in the engine into the
// KV cache or engine-queueing finding of the same endpoint or IC, as evidence: the engine's
// rejections are what the saturation looks like to callers. A spike without such a finding
// stays, at info.
func foldRejections(fs []Finding) []Finding {
	folded := make([]bool, len(fs))
	for j, f := range fs {
		if !f.rejections {
			continue
		}
		for i := range fs {
			c := &fs[i]
			if (c.Rule == "kv-cache-saturation" || c.Rule == "engine-queueing") &&
				((f.Target.Level == LevelEndpoint && c.Target.Endpoint == f.Target.Name) || (f.Target.Level == LevelIC && c.Target.Name == f.Target.Name)) {
				c.Evidence = append(c.Evidence, Evidence{What: "4xx errors while requests waited (the engine turning requests away)", Value: f.Evidence[0].Value, Query: f.Evidence[0].Query})
				folded[j] = true
				break
			}
		}
	}
	out := fs[:0]
	for j, f := range fs {
		if !folded[j] {
			out = append(out, f)
		}
	}
	return out
}

// beyondChance says whether the worst step's errors are more than the usual ratio's rare
// errors would give by chance: at least minCount more than it predicts, and beyond five
// standard deviations of a Poisson count with that mean. Across a big fleet, independent
// errors add up to a few per step and the worst of hundreds of steps is a few more; that is
// not a spike.
func beyondChance(p ratioPoint, usual, minCount float64) bool {
	expected := usual * p.invocs
	return p.errs-expected >= max(minCount, 5*math.Sqrt(max(expected, 1)))
}

func errorAdvice(kind string) string {
	switch kind {
	case "4xx":
		return "Check the callers: payload size, malformed input, throttling (4xx are client-side); compare with a recent client deployment."
	case "model":
		return "Read the container logs for the model's exceptions at that time; check for OOM, bad inputs or a bad model version."
	}
	return "Check the instance and container health at that time (crash, OOM, restarts) and the model logs; see the GPU memory panel for a crash."
}
