package fleet

import "fmt"

// Large builds a fleet of about instances instances with gpus GPUs each, spread over three
// AZs in endpoints of 20 instances: every other endpoint is an IC endpoint with three ICs
// (vLLM and SGLang), the others are single-model endpoints cycling vLLM, SGLang and DJL. It
// exists for the backfill benchmark and for query-latency measurements at fleet scale.
func Large(instances, gpus int) *Fleet {
	f := &Fleet{
		Account: "123456789012",
		Region:  "us-east-1",
		Models: []Model{
			{Name: "llama-3.1-8b", WeightsMiB: 15320, KVKiBPerToken: 128, PromptTokens: 600, OutputTokens: 250, ITLMillis: 10, PrefillTokensPerS: 20000, MaxNumSeqs: 256},
			{Name: "qwen2.5-32b", WeightsMiB: 62000, KVKiBPerToken: 256, PromptTokens: 900, OutputTokens: 300, ITLMillis: 18, PrefillTokensPerS: 9000, MaxNumSeqs: 128},
		},
	}
	azs := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	const perEndpoint = 20
	engines := []string{EngineVLLM, EngineSGLang, EngineDJL}
	for n, left := 0, instances; left > 0; n++ {
		count := min(perEndpoint, left)
		left -= count
		e := Endpoint{Name: fmt.Sprintf("fleet-ep-%03d", n)}
		for i, az := range azs {
			c := count / len(azs)
			if i < count%len(azs) {
				c++
			}
			if c > 0 {
				e.Instances = append(e.Instances, InstanceGroup{Type: "ml.p5.48xlarge", AZ: az, Count: c, GPUs: gpus, GPUMemoryMiB: 81559, GPUModel: "NVIDIA H100 80GB HBM3", MemoryGiB: 2048})
			}
		}
		total := count * gpus
		rate := float64(count) * 6
		if n%2 == 0 && total >= 8 {
			// Copies use about 80% of the GPUs; the rest is autoscaling headroom.
			e.InferenceComponents = []InferenceComponent{
				{Name: e.Name + "-chat", Model: "llama-3.1-8b", Engine: EngineVLLM, GPUsPerCopy: 1, Copies: total * 3 / 8, MaxCopies: total / 2, TargetConcurrencyPerCopy: 24,
					Traffic: Traffic{BaseRPS: rate, DiurnalAmplitude: 0.5, PeakHourUTC: 15, BurstsPerDay: 3, BurstFactor: 1.5}},
				{Name: e.Name + "-assist", Model: "llama-3.1-8b", Engine: EngineSGLang, GPUsPerCopy: 1, Copies: total / 4, MaxCopies: total * 3 / 8, TargetConcurrencyPerCopy: 24,
					Traffic: Traffic{BaseRPS: rate / 2, DiurnalAmplitude: 0.4, PeakHourUTC: 13}},
				{Name: e.Name + "-reason", Model: "qwen2.5-32b", Engine: EngineVLLM, GPUsPerCopy: 2, Copies: total / 16, MaxCopies: total / 8, TargetConcurrencyPerCopy: 12,
					Traffic: Traffic{BaseRPS: rate / 4, DiurnalAmplitude: 0.6, PeakHourUTC: 16}},
			}
		} else {
			e.Model, e.Engine = "qwen2.5-32b", engines[(n/2)%len(engines)]
			e.Traffic = Traffic{BaseRPS: rate / 2, DiurnalAmplitude: 0.5, PeakHourUTC: 14, BurstsPerDay: 2, BurstFactor: 1.5}
		}
		f.Endpoints = append(f.Endpoints, e)
	}
	f.applyDefaults()
	return f
}
