package diagnosis

import "context"

// rule is one reading rule: an id, the dashboard panel that shows its evidence, a priority
// (specific causes before the symptoms they produce: a crash explains its errors; an AZ the
// router skips overloads the copies elsewhere; a saturated engine explains why the copies
// there do not cope, before scaling explains why there are not more of them) and the
// evaluation. A rule sets Finding.Score to its strength in [0, 1); Run turns it into
// priority + 10·strength so findings of one severity rank by cause, then magnitude.
type rule struct {
	id       string
	panel    panelRef
	priority float64
	run      func(ctx context.Context, e *env) ([]Finding, error)
	// priced: the rule needs the region's prices; without them it is not run.
	priced bool
	// gated: the rule queries only when an AWS read (CloudTrail) gives it something to
	// check, so its success does not show that the region answers queries.
	gated bool
}

// querying counts the rules that query whatever the AWS reads find; a region answered when
// fewer of its rules failed.
func querying(rules []rule) int {
	n := 0
	for _, r := range rules {
		if !r.gated {
			n++
		}
	}
	return n
}

// runnable are the rules that can run with or without prices.
func runnable(rules []rule, havePrices bool) []rule {
	if havePrices {
		return rules
	}
	var out []rule
	for _, r := range rules {
		if !r.priced {
			out = append(out, r)
		}
	}
	return out
}

// allRules, in evaluation order.
var allRules = []rule{
	// A change the signal followed is the cause its symptoms' rules below describe.
	{id: changeRuleID, panel: panelLatencyBreakdown, priority: 99, run: runChange, gated: true},
	{id: "enrichment-off", panel: panelTraffic, priority: 95, run: runEnrichment},
	{id: "vram-drop", panel: panelGPUMemory, priority: 90, run: runVRAMDrop},
	{id: "gpu-hardware", panel: panelGPUErrors, priority: 88, run: runGPUHardware},
	{id: iceRuleID, panel: panelICE, priority: 85, run: runICE},
	{id: "az-traffic", panel: panelTraffic, priority: 88, run: runAZ},
	{id: "kv-cache-saturation", panel: panelEnginePressure, priority: 80, run: runKV},
	{id: "engine-queueing", panel: panelLatencyBreakdown, priority: 75, run: runQueueing},
	{id: "scaling", panel: panelScaling, priority: 70, run: runScaling},
	{id: "gpu-memory", panel: panelGPUMemory, priority: 60, run: runGPUMemory},
	{id: "gpu-thermal", panel: panelGPUThermal, priority: 55, run: runGPUThermal},
	{id: "cold-start", panel: panelColdStart, priority: 50, run: runColdStart},
	{id: "error-spike", panel: panelErrors, priority: 30, run: runErrors},
	{id: "throughput-drop", panel: panelThroughput, priority: 20, run: runThroughput},
	{id: idleRuleID, panel: panelIdle, priority: 5, run: runIdle, priced: true},
}

// iceRuleID is the ICE rule, which the cross-region ICE rule (crossRegionRuleID) goes with.
const iceRuleID = "ice-exhaustion"
