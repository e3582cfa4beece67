package diagnosis

import "time"

// Thresholds no caller sets: the plugin always runs DefaultConfig, no command-line flag, rule
// file or dashboard reads them, and none drives an alert rule. They are constants so that
// Config lists only what someone does change (docs/configure.md, "Diagnosis thresholds").
// Their source is the rule they belong to: its design (README.md, "Thresholds") and the
// scenarios of rig/itest/diagnosis that hold it, which fail when one moves.
const (
	// The smallest window for rate() on cumulative counters: 12 one-minute samples, so a rate survives a few late or missing points.
	rateWindow = 12 * time.Minute
	// Only the worst findings of one rule are kept: a table a person reads.
	maxFindingsPerRule = 10
	// The shortest departure of a signal that is an incident (KV saturation, an AZ without traffic, engine queueing); over a shorter range, half of the range.
	sustain = 10 * time.Minute
	// The fast window: a departure this long is an incident already when a second signal agrees, as a fast burn-rate window pages before the slow one.
	sustainFast = 3 * time.Minute
	// Sustained KV usage at or above this deserves an autoscaling trigger.
	kvEarlyWarning = 0.5
	// Against a known target: load per copy this many times it, still going on for sustainFast with no scale-out, is overload already.
	scalingFarOver = 1.5
	// KV cache per running request within this factor of its usual level: requests of the usual size.
	footprintRatio = 1.5
	// A scale-out slower than this is slow scaling.
	slowScalingAfter = 10 * time.Minute
	// A TTFT rise below this is ignored.
	ttftMin = 500 * time.Millisecond
	// P99 TTFT peak / usual at or above this is "up".
	ttftRiseRatio = 2
	// Framebuffer used % at or above this: critical.
	gpuMemCritPct = 98
	// Percentage points of growth over the range for a "leak".
	vramGrowthPct = 5
	// A smaller rise is a leak too when it fills VRAM within TimeToFullCrit.
	vramCreepPct = 1
	// Minimum linear fit (R²) of a steady growth.
	vramGrowthR2 = 0.8
	// Per-instance traffic of the busiest AZ / quietest AZ at or above this is imbalance.
	azSkewRatio = 3
	// Busy GPUs without a vended series within this end of the range: enrichment is off.
	vendedWindow = time.Hour
	// A phase with at least this share of the cold start dominates it.
	coldStartShare = 0.5
	// Current tokens/s below this fraction of the range's peak is "far below".
	throughputRatio = 0.3
	// Peaks below this many tokens/s are idle engines, not drops.
	throughputMin = 1
	// Error ratio (errors / invocations) of a spike: warning.
	errorRateWarn = 0.01
	// Peak ratio / usual ratio at or above this is a spike.
	errorSpikeRatio = 3
)
