package diagnosis_test

import (
	"math"
	"strings"
	"testing"
	"time"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

const gpuMiB = 81920.0

// gpu writes one GPU's framebuffer used/free (MiB) from a used-% function.
func (d *fleetData) gpu(ep, ic, host, az string, usedPct func(int) float64) {
	kv := append(engLabels(ep, ic, host, az), "gpu", "0")
	d.float(lbls(semconv.DCGMFBUsed, kv...), func(i int) float64 { return usedPct(i) / 100 * gpuMiB })
	d.float(lbls(semconv.DCGMFBFree, kv...), func(i int) float64 { return (1 - usedPct(i)/100) * gpuMiB })
	d.float(lbls(semconv.DCGMGPUUtil, kv...), constant(60))
}

func TestGPUMemoryRule(t *testing.T) {
	noisy := func(f func(int) float64) func(int) float64 {
		return func(i int) float64 { return f(i) + math.Sin(float64(i))*0.5 }
	}
	cases := []struct {
		name  string
		used  func(int) float64
		want  []string // cause substrings, in rank order
		sev   Severity
		scope Level
		ttf   time.Duration // TimeToFullCrit; 0 keeps the default
	}{
		{"leak that fills within a day", noisy(ramp(55, 85)), []string{"Steady GPU memory growth"}, Critical, LevelInstance, 0},
		{"leak with more than TimeToFullCrit left", noisy(ramp(50, 61)), []string{"Steady GPU memory growth"}, Warning, LevelInstance, 6 * time.Hour},
		{"small rise that fills the GPU soon", noisy(ramp(95, 98.5)), []string{"Steady GPU memory growth"}, Critical, LevelInstance, 0},
		{"small rise with room to spare", noisy(ramp(40, 43)), nil, 0, "", 0},
		{"flat and high", constant(96), []string{"GPU memory pressure"}, Warning, LevelInstance, 0},
		{"flat at the limit", constant(99), []string{"GPU memory pressure"}, Critical, LevelInstance, 0},
		{"flat vLLM preallocation", noisy(constant(90)), nil, 0, "", 0},
		{"noisy but not growing", func(i int) float64 { return 60 + 15*math.Sin(float64(i)/5) }, nil, 0, "", 0},
		{"NaN", constant(math.NaN()), nil, 0, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			d.gpu("ep-a", "ic-a", "i-1", "az-1", c.used)
			d.gpu("ep-a", "ic-a", "i-2", "az-1", constant(50))
			cfg := DefaultConfig()
			cfg.Rules = []string{"gpu-memory"}
			if c.ttf > 0 {
				cfg.TimeToFullCrit = c.ttf
			}
			r := diagnoseWith(t, d.querier(), Scope{}, cfg)
			if len(r.Findings) != len(c.want) {
				t.Fatalf("want %v, got%s", c.want, describe(r.Findings))
			}
			for i, w := range c.want {
				f := r.Findings[i]
				if !strings.Contains(f.Cause, w) || f.Severity != c.sev || f.Target.Level != c.scope || f.Target.Name != "i-1" || f.Target.InferenceComponent != "ic-a" {
					t.Fatalf("want %s %s on i-1, got%s", c.sev, w, describe(r.Findings))
				}
			}
		})
	}
}

// An instance hosting two ICs' copies gets a finding per IC (their GPUs are judged apart);
// the two must not read as the same finding twice.
func TestGPUMemoryTwoICsOnOneInstance(t *testing.T) {
	d := newData(t)
	for _, ic := range []string{"ic-a", "ic-b"} {
		kv := append(engLabels("ep-a", ic, "i-1", "az-1"), "gpu", ic)
		d.float(lbls(semconv.DCGMFBUsed, kv...), func(i int) float64 { return ramp(55, 85)(i) / 100 * gpuMiB })
		d.float(lbls(semconv.DCGMFBFree, kv...), func(i int) float64 { return (1 - ramp(55, 85)(i)/100) * gpuMiB })
	}
	r := diagnose(t, d.querier(), Scope{}, "gpu-memory")
	if len(r.Findings) != 2 || r.Findings[0].Summary == r.Findings[1].Summary {
		t.Fatalf("want two findings that say which IC's GPUs, got%s", describe(r.Findings))
	}
	for _, f := range r.Findings {
		if !strings.Contains(f.Summary, "the GPUs of "+f.Target.InferenceComponent) {
			t.Fatalf("summary %q does not name the IC's GPUs", f.Summary)
		}
	}
}
