package fleet

import (
	"fmt"
	"math/rand/v2"

	"go.yaml.in/yaml/v3"
)

var (
	genRegions = []string{"us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-2", "ap-northeast-1", "sa-east-1"}
	genTypes   = []InstanceGroup{
		{Type: "ml.g5.2xlarge", GPUs: 1, GPUMemoryMiB: 23028, GPUModel: "NVIDIA A10G", MemoryGiB: 32},
		{Type: "ml.g5.12xlarge", GPUs: 4, GPUMemoryMiB: 23028, GPUModel: "NVIDIA A10G", MemoryGiB: 192},
		{Type: "ml.g6e.12xlarge", GPUs: 4, GPUMemoryMiB: 46068, GPUModel: "NVIDIA L40S", MemoryGiB: 384},
		{Type: "ml.p4d.24xlarge", GPUs: 8, GPUMemoryMiB: 40960, GPUModel: "NVIDIA A100-SXM4-40GB", MemoryGiB: 1152},
	}
	genModels = []Model{
		{Name: "llama-3.1-8b", WeightsMiB: 15320, KVKiBPerToken: 128, PromptTokens: 600, OutputTokens: 250, ITLMillis: 14, PrefillTokensPerS: 10000, MaxNumSeqs: 128},
		{Name: "qwen2.5-7b", WeightsMiB: 14540, KVKiBPerToken: 56, PromptTokens: 400, OutputTokens: 200, ITLMillis: 12, PrefillTokensPerS: 11000, MaxNumSeqs: 128},
		{Name: "mistral-7b", WeightsMiB: 13820, KVKiBPerToken: 128, PromptTokens: 1200, OutputTokens: 180, ITLMillis: 13, PrefillTokensPerS: 10000, MaxNumSeqs: 64},
	}
	genWords = []string{"chat", "search", "assist", "code", "docs", "triage", "summary", "vision", "agent", "rank"}
)

// Generate writes a random fleet from r (a seeded source gives the same fleet every run): 1-5 endpoints, IC and single-model, vLLM/SGLang/DJL, 2-4
// AZs of a random region, up to maxInstances instances. It goes through Parse like a
// user's file, so it is validated and defaulted the same way.
func Generate(r *rand.Rand, maxInstances int) (*Fleet, error) {
	region := genRegions[r.IntN(len(genRegions))]
	azs := make([]string, 2+r.IntN(3))
	for i, s := range r.Perm(4)[:len(azs)] {
		azs[i] = region + string(rune('a'+s)) // #nosec G115 -- s is below 4
	}
	f := &Fleet{Account: fmt.Sprintf("%012d", r.Int64N(1e12)), Region: region, Models: genModels}
	left := 1 + r.IntN(maxInstances)
	nEP := min(1+r.IntN(5), left)
	for i := range nEP {
		count := left / (nEP - i)
		if i < nEP-1 {
			count = 1 + r.IntN(max(1, 2*left/(nEP-i)-1))
			count = min(count, left-(nEP-i-1))
		}
		left -= count
		typ := genTypes[r.IntN(len(genTypes))]
		e := Endpoint{Name: fmt.Sprintf("%s-%s-%d", genWords[r.IntN(len(genWords))], genWords[r.IntN(len(genWords))], i)}
		perAZ := map[string]int{}
		for range count {
			perAZ[azs[r.IntN(len(azs))]]++
		}
		for _, az := range azs {
			if perAZ[az] > 0 {
				g := typ
				g.AZ, g.Count = az, perAZ[az]
				e.Instances = append(e.Instances, g)
			}
		}
		// headroom is what the daily peak and a burst multiply the base load by.
		traffic := func(rps, headroom float64) Traffic {
			amp, burst := 0.2+0.5*r.Float64(), 1+0.6*r.Float64()
			return Traffic{BaseRPS: min(rps, headroom/((1+amp)*burst)), DiurnalAmplitude: amp, PeakHourUTC: r.IntN(24), BurstsPerDay: float64(r.IntN(4)), BurstFactor: burst, BurstMinutes: 5 + r.IntN(20)}
		}
		gpus := count * typ.GPUs
		if gpus >= 2 && r.IntN(2) == 0 {
			// An IC endpoint: 1-3 ICs sharing about three quarters of the GPUs.
			nIC := min(1+r.IntN(3), gpus)
			budget := max(nIC, gpus*3/4)
			for j := range nIC {
				copies := max(1, budget/(nIC-j)/(1+r.IntN(2)))
				budget -= copies
				target := float64(8 + r.IntN(12))
				m := genModels[r.IntN(len(genModels))]
				// Offered load a third to two thirds of the target at the usual level, so
				// bursts and the daily peak stay within what autoscaling can add.
				perCopy := perCopyRPS(m, target)
				maxCopies := min(gpus, copies*2)
				rps := float64(copies) * perCopy * (0.33 + 0.33*r.Float64())
				e.InferenceComponents = append(e.InferenceComponents, InferenceComponent{
					Name: fmt.Sprintf("%s-ic%d", e.Name, j), Model: m.Name,
					Engine: []string{EngineVLLM, EngineSGLang}[r.IntN(2)], GPUsPerCopy: 1,
					Copies: copies, MinCopies: max(1, copies/2), MaxCopies: maxCopies,
					// A healthy fleet keeps headroom: its peak fits in half of the most copies
					// (a busy copy serves slower than at rest).
					TargetConcurrencyPerCopy: target, Traffic: traffic(rps, 0.5*float64(maxCopies)*perCopy),
				})
			}
			fitMaxCopies(&e)
		} else {
			e.Model = genModels[r.IntN(len(genModels))].Name
			e.Engine = []string{EngineVLLM, EngineSGLang, EngineDJL}[r.IntN(3)]
			e.Traffic = traffic(float64(count)*(0.5+r.Float64()), 3*float64(count))
		}
		f.Endpoints = append(f.Endpoints, e)
	}
	doc, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	return Parse("generated.yaml", doc)
}

// perCopyRPS is the requests per second one copy of m serves at target concurrency, at rest.
func perCopyRPS(m Model, target float64) float64 {
	return target / (float64(m.PromptTokens)/m.PrefillTokensPerS + float64(m.OutputTokens)*m.ITLMillis/1000)
}

// fitMaxCopies caps each IC's max copies at the slots its endpoint's free GPUs give it (ICs
// share the GPUs), and its peak load at half of them: the headroom Generate means to keep.
// Without it an IC sized for copies that never fit runs above its target at its real
// maximum, which the scaling rule rightly reports in a case meant to show another incident.
// It draws no random numbers, so every other part of a case stays as its seed made it.
func fitMaxCopies(e *Endpoint) {
	l, err := Place(e)
	if err != nil {
		return // Parse reports it
	}
	slots := make([]int, len(e.InferenceComponents))
	for _, s := range l.Slots {
		slots[s.IC]++
	}
	for j := range e.InferenceComponents {
		ic := &e.InferenceComponents[j]
		if slots[j] >= ic.MaxCopies {
			continue
		}
		ic.MaxCopies = slots[j]
		for _, m := range genModels {
			if m.Name == ic.Model {
				tr := &ic.Traffic
				tr.BaseRPS = min(tr.BaseRPS, 0.5*float64(slots[j])*perCopyRPS(m, ic.TargetConcurrencyPerCopy)/((1+tr.DiurnalAmplitude)*tr.BurstFactor))
			}
		}
	}
}
