package simulator

import "math"

// Engine histogram bucket boundaries as the engines define them (metrics-catalog §4.3, §4.4;
// the SGLang TTFT/ITL lists match the real scrape in shared/fixtures/metrics).
var (
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	vllmITLBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	vllmE2EBuckets  = []float64{0.1, 0.2, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	sglTTFTBuckets  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sglITLBuckets   = []float64{0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8}
	sglE2EBuckets   = append(append([]float64{}, sglTTFTBuckets...), 600, 1200, 1800, 2400)
	sglQueueBuckets = []float64{0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
	// Vended latency histograms in microseconds: CloudWatch does not publish its boundaries
	// [catalog §10.6]; a 1-2-5 series from 1 ms to 500 s keeps quantiles within a factor 2.5.
	vendedLatencyBuckets = oneTwoFive(1e3, 5e8)
)

func oneTwoFive(from, to float64) []float64 {
	var out []float64
	for d := from; d <= to; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if d*m <= to {
				out = append(out, d*m)
			}
		}
	}
	return out
}

// Request shapes (log-normal σ) for the histograms.
const (
	sigmaTTFT  = 0.35
	sigmaITL   = 0.25
	sigmaE2E   = 0.3
	sigmaQueue = 0.9
	sigmaModel = 0.3
	sigmaOver  = 0.25
)

// engineParams are the per-step inputs of the queue model for one copy.
type engineParams struct {
	prompt, output  float64 // tokens per request
	kvTokens        float64 // KV pool of the copy, in tokens
	maxSeqs         float64 // engine batch cap (a scenario may lower it)
	refBatch        float64 // the model's usual batch cap: ITL grows with batch/refBatch
	itl             float64 // s per decode step at batch 1
	prefillTokensPS float64
}

// engineState is one step of a copy's engine.
type engineState struct {
	running, waiting float64
	kv               float64 // 0..1
	throughput       float64 // completed requests/s
	queueWait        float64 // s
	ttft, itl, e2e   float64 // s
	inference        float64 // s: prefill + decode, what ModelLatency reports
	preemptRate      float64 // /s
	dropped          float64 // requests dropped this step (queue full)
	batchCap         float64
}

// step advances a copy by dt seconds at arrival rate lambda (req/s). Capacity is the smaller
// of the engine's batch cap and what fits in the KV pool; above it a backlog builds (the
// waiting queue), bounded at three batches, and requests wait backlog/throughput (Little).
// ITL grows with the batch, TTFT = queue wait + prefill + one decode step.
func (p engineParams) step(lambda, dt float64, backlog *float64) engineState {
	ctx := p.prompt + p.output/2 // mean tokens held in KV by a running request
	kvCap := 0.97 * p.kvTokens / ctx
	capB := math.Max(1, math.Min(p.maxSeqs, kvCap))
	itl := func(b float64) float64 { return p.itl * (1 + b/p.refBatch) }
	prefill := p.prompt / p.prefillTokensPS
	service := func(b float64) float64 { return prefill*(1+0.3*b/p.refBatch) + p.output*itl(b) }

	b := lambda * service(0)
	for range 4 {
		b = math.Min(lambda*service(b), capB)
	}
	mu := capB / service(capB)
	if lambda*service(b) >= capB {
		*backlog += (lambda - mu) * dt
	} else {
		*backlog -= (mu - lambda) * dt
	}
	*backlog = math.Max(0, *backlog)
	var st engineState
	st.batchCap = capB
	if limit := 3 * capB; *backlog > limit {
		st.dropped = *backlog - limit
		*backlog = limit
	}
	if *backlog > 0 {
		b = capB
	}
	rho := b / capB
	st.running = b
	// A small queue forms before saturation, as in any M/M/c system near full load.
	st.waiting = *backlog + capB*0.3*math.Pow(rho, 12)
	st.throughput = b / service(b)
	st.queueWait = 0.004 + st.waiting/math.Max(st.throughput, 1e-3)
	if lambda == 0 && *backlog == 0 {
		st.waiting, st.queueWait = 0, 0
	}
	st.itl = itl(b)
	st.inference = service(b)
	st.ttft = st.queueWait + prefill*(1+0.3*b/p.refBatch) + st.itl
	st.e2e = st.queueWait + st.inference
	st.kv = math.Min(0.99, b*ctx/p.kvTokens)
	if kvCap <= p.maxSeqs && *backlog > 0 {
		st.preemptRate = 0.02 * b
	}
	return st
}

// serviceAtRest is a request's service time on an idle engine.
func (p engineParams) serviceAtRest() float64 {
	return p.prompt/p.prefillTokensPS + p.output*p.itl
}
