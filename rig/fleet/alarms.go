package fleet

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Alarm is a CloudWatch PromQL alarm of the fleet file. The threshold is part of the query,
// as in CloudWatch: every series the query returns is breaching. With ForEach set the alarm
// is one per inference component or endpoint, with {{ic}} and {{endpoint}} replaced.
type Alarm struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	ForEach     string `yaml:"for_each"` // "", ForEachIC or ForEachEndpoint
	Query       string `yaml:"query"`
	// Period is the evaluation interval (default 1m). The alarm goes to ALARM once a
	// series has breached for PendingPeriod, and back to OK once nothing has for
	// RecoveryPeriod.
	Period         time.Duration `yaml:"period"`
	PendingPeriod  time.Duration `yaml:"pending_period"`
	RecoveryPeriod time.Duration `yaml:"recovery_period"`
}

// Values of Alarm.ForEach and the placeholders they fill.
const (
	ForEachIC       = "inference_component"
	ForEachEndpoint = "endpoint"
	placeholderIC   = "{{ic}}"
	placeholderEP   = "{{endpoint}}"
)

const defaultAlarmPeriod = time.Minute

// AlarmDefs are the fleet's alarms with ForEach expanded: those of the file, or the
// defaults (DefaultAlarms) when the file has no alarms: section. `alarms: []` means none.
func (f *Fleet) AlarmDefs() []Alarm {
	if f.Alarms == nil {
		return DefaultAlarms(f)
	}
	var out []Alarm
	for _, a := range f.Alarms {
		out = append(out, f.expand(a)...)
	}
	return out
}

// expand returns one alarm per IC or endpoint for ForEach, else the alarm itself.
func (f *Fleet) expand(a Alarm) []Alarm {
	if a.Period == 0 {
		a.Period = defaultAlarmPeriod
	}
	fill := func(ep, ic string) Alarm {
		b := a
		r := strings.NewReplacer(placeholderIC, ic, placeholderEP, ep)
		b.Name, b.Query, b.Description = r.Replace(a.Name), r.Replace(a.Query), r.Replace(a.Description)
		b.ForEach = ""
		return b
	}
	var out []Alarm
	switch a.ForEach {
	case ForEachIC:
		for _, e := range f.Endpoints {
			for _, ic := range e.InferenceComponents {
				out = append(out, fill(e.Name, ic.Name))
			}
		}
	case ForEachEndpoint:
		for _, e := range f.Endpoints {
			out = append(out, fill(e.Name, ""))
		}
	default:
		out = append(out, a)
	}
	return out
}

// DefaultAlarms are the alarms of a fleet file without an alarms: section, with the
// diagnosis' default thresholds: KV cache usage and TTFT P99 per IC or single-model
// endpoint whose engine exports them, the 5XX share per IC or endpoint, and one GPU memory
// alarm whose contributors are the instances.
func DefaultAlarms(f *Fleet) []Alarm {
	cfg := diagnosis.DefaultConfig()
	var out []Alarm
	add := func(name, desc, query string, pending, recovery time.Duration) {
		out = append(out, Alarm{Name: name, Description: desc, Query: query, Period: defaultAlarmPeriod, PendingPeriod: pending, RecoveryPeriod: recovery})
	}
	byEngine := []string{sc.LabelEndpoint, sc.LabelInferenceComp}
	byVended := []string{sc.DimEndpointName, sc.DimInferenceComponentName}
	for _, e := range f.Endpoints {
		type deployment struct{ name, engine, eng, vended string }
		var ds []deployment
		if e.IsIC() {
			for _, ic := range e.InferenceComponents {
				ds = append(ds, deployment{ic.Name, ic.Engine, px.Eq(sc.LabelInferenceComp, ic.Name), px.Eq(sc.DimInferenceComponentName, ic.Name)})
			}
		} else {
			ds = append(ds, deployment{e.Name, e.Engine, px.Eq(sc.LabelEndpoint, e.Name), px.Eq(sc.DimEndpointName, e.Name)})
		}
		for _, d := range ds {
			if kv, ttft := engineMetrics(d.engine); kv != "" {
				add("kv-cache-"+d.name, fmt.Sprintf("KV cache usage of %s at or above %g", d.name, cfg.KVSaturation),
					fmt.Sprintf("%s >= %g", px.Agg("max", byEngine, px.Sel(kv, d.eng)), cfg.KVSaturation), 5*time.Minute, 5*time.Minute)
				add("ttft-p99-"+d.name, fmt.Sprintf("TTFT P99 of %s at or above %v", d.name, cfg.TTFTHigh),
					fmt.Sprintf("histogram_quantile(0.99, %s) >= %g", px.Agg("sum", byEngine, "rate("+px.Sel(ttft, d.eng)+"[5m])"), cfg.TTFTHigh.Seconds()), 5*time.Minute, 5*time.Minute)
			}
			errs, inv := sc.Invocation5XXErrors, sc.Invocations
			if e.IsIC() {
				errs, inv = sc.Invocation5XXErrorsForIC, sc.InvocationsForIC
			}
			ratio := fmt.Sprintf("%s / %s",
				px.Agg("sum", byVended, "sum_over_time("+px.Sel(errs, d.vended)+"[5m])"),
				px.Agg("sum", byVended, "sum_over_time("+px.Sel(inv, d.vended)+"[5m])"))
			add("5xx-"+d.name, fmt.Sprintf("5XX share of %s's invocations at or above %g", d.name, cfg.ErrorRateCrit),
				fmt.Sprintf("%s >= %g", ratio, cfg.ErrorRateCrit), 3*time.Minute, 5*time.Minute)
		}
	}
	// One multi-series alarm over the fleet: it names no resource itself, so its contributors
	// (endpoint and instance labels) tie it to the instances in trouble.
	used, free := px.Sel(sc.DCGMFBUsed), px.Sel(sc.DCGMFBFree)
	add("gpu-memory", fmt.Sprintf("GPU memory used on an instance at or above %g%%", cfg.GPUMemWarnPct),
		fmt.Sprintf("100 * %s >= %g", px.Agg("max", []string{sc.LabelEndpoint, sc.LabelHostID}, fmt.Sprintf("%s / (%s + %s)", used, used, free)), cfg.GPUMemWarnPct),
		5*time.Minute, 5*time.Minute)
	return out
}

// engineMetrics are the KV cache usage and TTFT histogram of an engine; "" for DJL, which
// exports neither.
func engineMetrics(engine string) (kv, ttft string) {
	switch engine {
	case EngineVLLM:
		return px.KVUsage.VLLM, px.TTFT.VLLM
	case EngineSGLang:
		return px.KVUsage.SGLang, px.TTFT.SGLang
	}
	return "", ""
}

// promqlParser is the Prometheus 3 parser the emulator runs (UTF-8 names must be quoted).
var promqlParser = parser.NewParser(parser.Options{})

// alarmNameOK follows CloudWatch: 1-255 characters, none of them control characters.
func alarmNameOK(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func (v *validator) alarms(f *Fleet) {
	seen := map[string]string{} // expanded name → path of its definition
	for i, a := range f.Alarms {
		p := fmt.Sprintf("alarms[%d]", i)
		before := len(v.errs)
		switch a.ForEach {
		case "", ForEachIC, ForEachEndpoint:
		default:
			v.add(p+".for_each", "use inference_component, endpoint, or leave it out for a single alarm", "for_each %q is not supported", a.ForEach)
		}
		if a.ForEach != ForEachIC && strings.Contains(a.Name+a.Query, placeholderIC) {
			v.add(p+".query", "set for_each: inference_component, or write the IC's name", "%s is only filled in with for_each: inference_component", placeholderIC)
		}
		if a.ForEach == "" && strings.Contains(a.Name+a.Query, placeholderEP) {
			v.add(p+".query", "set for_each: endpoint (or inference_component), or write the endpoint's name", "%s is only filled in with for_each", placeholderEP)
		}
		if a.ForEach != "" && !strings.Contains(a.Name, "{{") {
			v.add(p+".name", "put {{ic}} or {{endpoint}} in the name so each expanded alarm has its own", "alarm %q repeats for each %s but its name does not change", a.Name, a.ForEach)
		}
		if strings.TrimSpace(a.Query) == "" {
			v.add(p+".query", "write the PromQL with its threshold, e.g. max by (...) (...) > 0.9", "alarm without a query")
		}
		for _, d := range []struct {
			field string
			d     time.Duration
		}{{"period", a.Period}, {"pending_period", a.PendingPeriod}, {"recovery_period", a.RecoveryPeriod}} {
			field, d := d.field, d.d
			if d < 0 || d%time.Second != 0 || (field == "period" && d != 0 && d < 10*time.Second) {
				v.add(p+"."+field, "use whole seconds such as 60s or 5m (period at least 10s)", "%s %v is not a valid duration here", field, d)
			}
		}
		if len(v.errs) > before {
			continue
		}
		for _, x := range f.expand(a) {
			if !alarmNameOK(x.Name) {
				v.add(p+".name", "use 1-255 characters without control characters", "alarm name %q is not valid", x.Name)
				break
			}
			if prev, dup := seen[x.Name]; dup {
				v.add(p+".name", "alarm names must be unique in the region", "alarm %q is also defined at %s", x.Name, prev)
				break
			}
			seen[x.Name] = p
			if _, err := promqlParser.ParseExpr(x.Query); err != nil {
				v.add(p+".query", "fix the PromQL (quote UTF-8 names: {\"vllm:kv_cache_usage_perc\"})", "query of %s does not parse: %v", x.Name, err)
				break
			}
		}
	}
}
