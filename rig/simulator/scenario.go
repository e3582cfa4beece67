package simulator

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Scenario is a named incident the simulator plays in the last part of the history.
// SCENARIOS.md describes what a user sees for each and which query shows it.
type Scenario struct {
	Name    string
	Summary string
	apply   func(s *Simulator) error
	// noEnrichment: the account has OTel enrichment off, so no vended series and no tag
	// labels; known before the series are built.
	noEnrichment bool
}

var scenarios = []*Scenario{
	{Name: "healthy", Summary: "normal diurnal load, autoscaling keeps concurrency near target, no incident", apply: func(*Simulator) error { return nil }},
	{Name: "kv-saturation", Summary: "one vLLM IC gets long prompts at full copies: KV cache pinned near full, waiting requests and TTFT up, model latency normal", apply: applyKVSaturation},
	{Name: "gpu-memory-leak", Summary: "GPU memory on one instance creeps up over the whole history toward full", apply: applyLeak},
	{Name: "model-crash", Summary: "one copy's container dies an hour ago: its GPU memory drops to zero and its requests fail with 5XX/model errors", apply: applyCrash},
	{Name: "az-imbalance", Summary: "the router stops sending traffic to one AZ of an IC endpoint while its instances stay up", apply: applyAZImbalance},
	{Name: "scaling-not-firing", Summary: "one IC runs above its target concurrency per copy with no ScaleOut events; copies stay flat", apply: applyScalingNotFiring},
	{Name: "slow-cold-start", Summary: "IC copies provisioned recently spend most of their cold start downloading the model", apply: applySlowColdStart},
	{Name: "ice-exhaustion", Summary: "insufficient capacity errors for one instance type in every AZ", apply: applyICE},
	{Name: "gpu-degrade", Summary: "one GPU overheats: temperature climbs past 87 °C, clocks throttle (thermal), corrected ECC errors climb and a double-bit error raises XID 48; the copy on it decodes slower", apply: applyGPUDegrade},
	{Name: "enrichment-off", Summary: "healthy fleet in an account where OTel enrichment of vended metrics is off: engine, DCGM and host series arrive, Invocations, latencies and the other vended metrics do not, and no series carries resource tag labels", apply: func(*Simulator) error { return nil }, noEnrichment: true},
	{Name: "engine-queueing", Summary: "one SGLang IC's engine holds requests in its queue: TTFT and waiting up while ModelLatency, OverheadLatency and KV look normal", apply: applyEngineQueueing},
	{Name: "bad-deploy", Summary: "an UpdateInferenceComponent puts a new image on one vLLM IC two minutes before its decoding slows: ITL and TTFT up on that IC only", apply: applyBadDeploy},
	{Name: "bad-config", Summary: "an UpdateEndpoint moves one endpoint to a new endpoint config two minutes before 30% of its requests start failing (5XX, model errors)", apply: applyBadConfig},
	{Name: "benign-deploy", Summary: "an image update with no effect on an IC of one endpoint while engine-queueing starts on an IC of another, five minutes later", apply: applyBenignDeploy},
}

// Scenarios lists every scenario in a stable order.
func Scenarios() []Scenario {
	out := make([]Scenario, len(scenarios))
	for i, s := range scenarios {
		out[i] = Scenario{Name: s.Name, Summary: s.Summary}
	}
	return out
}

func lookupScenario(name string) *Scenario {
	for _, s := range scenarios {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func scenarioNames() string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// Target of a scenario: the first IC group matching, skipping groups other scenarios prefer,
// so that in the default fleet each IC incident hits a different IC.
func (s *Simulator) icGroup(engine string, skip ...*groupSim) *groupSim {
	for _, ep := range s.eps {
	next:
		for _, g := range ep.groups {
			if g.ic == nil || (engine != "" && g.engine != engine) {
				continue
			}
			for _, x := range skip {
				if x == g {
					continue next
				}
			}
			return g
		}
	}
	return nil
}

var errNoIC = errors.New("the fleet has no inference component for this scenario; add an IC endpoint")

func applyKVSaturation(s *Simulator) error {
	g := s.icGroup(fleet.EngineVLLM)
	if g == nil {
		return errNoIC
	}
	// Long-context traffic: prompts long enough (at least 4x) that the KV pool holds at most
	// half the engine's batch cap, so KV is the binding limit whatever the GPU; offered load
	// twice the KV-bound batch keeps it pinned whatever the hour; the IC is already at its
	// copy limit.
	m := g.model
	g.promptFactor = max(4, (2*g.slots[0].kvTokens/float64(m.MaxNumSeqs)-float64(m.OutputTokens)/2)/float64(m.PromptTokens))
	p := g.params(true)
	p.kvTokens = g.slots[0].kvTokens
	ctx := p.prompt + p.output/2
	g.floorConcurrency = 2 * 0.97 * p.kvTokens / ctx
	g.noScaling = true
	return nil
}

func applyEngineQueueing(s *Simulator) error {
	g := s.icGroup(fleet.EngineSGLang)
	if g == nil {
		g = s.icGroup("", s.icGroup(fleet.EngineVLLM))
	}
	if g == nil {
		return errNoIC
	}
	// The scheduler admits only a few requests at a time (a low max running-requests
	// setting): requests queue in the engine with KV and ITL unaffected.
	g.maxSeqs = 4
	g.floorConcurrency = 12
	g.noScaling = true
	return nil
}

func applyScalingNotFiring(s *Simulator) error {
	kv := s.icGroup(fleet.EngineVLLM)
	g := s.icGroup("", kv, s.icGroup(fleet.EngineSGLang))
	if g == nil {
		g = kv
	}
	if g == nil {
		return errNoIC
	}
	// Busy but not saturated: 1.8x the target, held under 70% of what a copy can run at once
	// (batch cap or KV pool), else the KV or queue rules would rightly name saturation.
	p := g.params(true)
	p.kvTokens = g.slots[0].kvTokens
	capacity := min(p.maxSeqs, 0.97*p.kvTokens/(p.prompt+p.output/2))
	g.floorConcurrency = min(1.8*g.ic.TargetConcurrencyPerCopy, 0.7*capacity)
	if g.floorConcurrency < 1.2*g.ic.TargetConcurrencyPerCopy {
		return fmt.Errorf("inference component %s: its target (%g per copy) is close to what a copy can run at once (%.0f), so overload would saturate it; lower target_concurrency_per_copy", g.name, g.ic.TargetConcurrencyPerCopy, capacity)
	}
	g.noScaling = true
	return nil
}

func applySlowColdStart(s *Simulator) error {
	g := s.icGroup(fleet.EngineVLLM)
	if g == nil {
		return errNoIC
	}
	g.slowDownload = true
	for _, m := range []int{-80, -55, -30, -5} { // minutes of the default 90-minute lead
		g.forcedColdStarts = append(g.forcedColdStarts, int64(m)*s.lead.Milliseconds()/int64(IncidentLead/time.Minute))
	}
	return nil
}

func applyLeak(s *Simulator) error {
	for _, in := range s.insts {
		if len(in.copies) > 0 {
			in.leak = true
			return nil
		}
	}
	return errors.New("no instance hosts a model copy")
}

// applyGPUDegrade picks the first GPU serving a copy on the last instance of an IC endpoint
// that has one, so it differs from the leak's instance (the first) in the default fleet, and
// the copy on it has token metrics to show the slowdown.
func applyGPUDegrade(s *Simulator) error {
	for i := len(s.insts) - 1; i >= 0; i-- {
		if !s.insts[i].ep.cfg.IsIC() {
			continue
		}
		for _, g := range s.insts[i].gpus {
			if g.owner != nil && g.owner.active {
				g.degraded = true
				return nil
			}
		}
	}
	return errors.New("no GPU serves a model copy")
}

func applyCrash(s *Simulator) error {
	// Prefer a single-model endpoint with several instances: the crash then shows as one
	// instance's errors while the others keep serving.
	for _, ep := range s.eps {
		if !ep.cfg.IsIC() && len(ep.groups[0].slots) > 1 {
			s.crash = ep.groups[0].slots[1]
			return nil
		}
	}
	// Else an IC whose second copy autoscaling never removes (at least two copies at all
	// times), so the crash plays whatever the load.
	for _, ep := range s.eps {
		for _, g := range ep.groups {
			if g.ic != nil && g.active > 1 && g.ic.MinCopies > 1 {
				s.crash = g.slots[1]
				return nil
			}
		}
	}
	return errors.New("no single-model endpoint with two or more instances and no IC with min_copies of two or more: add one to crash a copy of")
}

func applyAZImbalance(s *Simulator) error {
	// The drained AZ must hold a copy autoscaling never removes, and another AZ one too: an
	// AZ whose instances host no copy is sent nothing by design, so draining it changes
	// nothing, and the endpoint must keep serving elsewhere.
	for _, ep := range s.eps {
		if !ep.cfg.IsIC() {
			continue
		}
		serving := map[*instSim]bool{}
		for _, g := range ep.groups {
			if g.ic == nil {
				continue
			}
			for _, c := range g.slots[:min(g.ic.MinCopies, len(g.slots))] {
				serving[c.inst] = true
			}
		}
		azs := map[string]bool{}
		last := ""
		for _, in := range ep.insts {
			if serving[in] {
				azs[in.placed.AZ] = true
				last = in.placed.AZ
			}
		}
		if len(azs) > 1 {
			ep.zeroAZ = last
			return nil
		}
	}
	return errors.New("no IC endpoint has copies that always serve in two or more AZs")
}

func applyICE(s *Simulator) error {
	ep := s.eps[0]
	for _, e := range s.eps {
		if e.cfg.IsIC() {
			ep = e
			break
		}
	}
	ice := &iceSim{ep: ep, typ: ep.insts[0].placed.Type, azs: s.f.AZs()}
	// Ten failed launches over the incident window (every ten minutes of the default lead),
	// cycling the AZs.
	every := max(s.lead/9, time.Minute)
	for off := -s.lead; off <= 0; off += every {
		ice.offsets = append(ice.offsets, off.Milliseconds())
	}
	s.ice = ice
	return nil
}
