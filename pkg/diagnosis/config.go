package diagnosis

import (
	"errors"
	"fmt"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Config holds the thresholds of every rule and the query shape. DefaultConfig documents the
// defaults (also tabled in README.md); change a field to tune a rule for a fleet.
type Config struct {
	// Rules to run, by id (RuleIDs); empty runs all of them.
	Rules []string
	// Concurrency is the number of rules evaluated at once (each sends its own queries).
	Concurrency int
	// MaxPoints bounds the points per series of range queries; the step grows with the range.
	MaxPoints int
	// MinStep is the smallest range-query step (the metrics' publish period).
	MinStep time.Duration
	// RateWindow is the smallest window for rate() on cumulative counters.
	RateWindow time.Duration
	// MaxFindingsPerRule keeps only the worst findings of one rule.
	MaxFindingsPerRule int
	// SeriesLimit is the upstream's series cap per query (CloudWatch: 500); a result that
	// reaches it is reported as possibly truncated.
	SeriesLimit int

	// Sustain is the shortest departure of a signal that is an incident (KV saturation, an AZ
	// without traffic, engine queueing); over a shorter range, half of the range.
	Sustain time.Duration
	// SustainFast is the fast window: a departure this long is an incident already when a
	// second signal agrees (requests waiting in the engine), as a fast burn-rate window pages
	// before the slow one.
	SustainFast time.Duration

	// KV cache (ratio 0-1 per copy).
	KVQuantile       float64 // KV usage exceeded this share of the range is "running warm"
	KVSaturation     float64 // sustained usage at or above this is saturation
	KVEarlyWarning   float64 // sustained usage at or above this deserves an autoscaling trigger
	WaitingRequests  float64 // average waiting requests that confirm requests queue
	ScalingRise      float64 // without the IC's policy (Region.Policies): load per copy this many times its usual level is overload
	ScalingOverload  time.Duration
	ScalingFarOver   float64       // against a known target: load per copy this many times it, still going on for SustainFast with no scale-out, is overload already
	ScalingBaseline  time.Duration // how far before the range the usual load is read from
	FootprintRatio   float64       // KV cache per running request within this factor of its usual level: requests of the usual size
	SlowScaling      time.Duration // a scale-out slower than this is slow scaling
	TTFTHigh         time.Duration // P99 TTFT at or above this is high whatever its history
	TTFTMin          time.Duration // a TTFT rise below this is ignored
	TTFTRiseRatio    float64       // P99 TTFT peak / usual at or above this is "up"
	LatencyNormal    float64       // model/overhead latency peak / usual below this is "normal"
	GPUMemWarnPct    float64       // framebuffer used % at or above this: warning
	GPUMemCritPct    float64       // framebuffer used % at or above this: critical
	GPUTempHot       float64       // °C: a GPU that stays above this runs hot (datacenter GPUs throttle from about 87 °C)
	VRAMGrowthPct    float64       // percentage points of growth over the range for a "leak"
	VRAMCreepPct     float64       // a smaller rise is a leak too when it fills VRAM within TimeToFullCrit
	VRAMGrowthR2     float64       // minimum linear fit (R²) of a steady growth
	TimeToFullCrit   time.Duration // a growth that fills VRAM sooner than this is critical
	VRAMDropPct      float64       // % of its level lost within VRAMDropWithin: a sudden drop
	VRAMDropWithin   time.Duration
	AZNoTrafficShare float64       // an AZ with instances getting less than this share of its fair traffic has "no traffic"
	AZSkewRatio      float64       // per-instance traffic of the busiest AZ / quietest AZ at or above this is imbalance
	AZMinInvocations float64       // fewer invocations per instance than this in a window are too few to judge an AZ's share
	VendedWindow     time.Duration // busy GPUs without a vended series within this end of the range: enrichment is off
	ColdStartSlow    time.Duration
	ColdStartShare   float64 // a phase with at least this share of the cold start dominates it
	ThroughputRatio  float64 // current tokens/s below this fraction of the range's peak is "far below"
	ThroughputMin    float64 // peaks below this many tokens/s are idle engines, not drops
	ErrorRateWarn    float64 // error ratio (errors / invocations) of a spike: warning
	ErrorRateCrit    float64 // 5xx or model error ratio of a spike: critical
	ErrorSpikeRatio  float64 // peak ratio / usual ratio at or above this is a spike
	ErrorMinCount    float64 // fewer errors than this in the peak step are noise (a quiet endpoint's one error is 1%)

	// Idle capacity (USD at the instances' prices; docs/cost.md): spend per day on GPUs no
	// copy holds and on copies serving fewer than IdleQuietTokensPerHour output tokens an hour.
	IdleInfoUSDPerDay      float64 // at or above this: an info finding
	IdleWarnUSDPerDay      float64 // at or above this: a warning
	IdleQuietTokensPerHour float64
}

// DefaultConfig returns the documented defaults (README.md, "Thresholds").
func DefaultConfig() Config {
	return Config{
		Concurrency:        4,
		MaxPoints:          240,
		MinStep:            time.Minute,
		RateWindow:         12 * time.Minute,
		MaxFindingsPerRule: 10,
		SeriesLimit:        promclient.MaxQueryLimit,

		Sustain:          10 * time.Minute,
		SustainFast:      3 * time.Minute,
		KVQuantile:       0.9,
		KVSaturation:     0.9,
		KVEarlyWarning:   0.5,
		WaitingRequests:  1,
		ScalingRise:      2,
		ScalingOverload:  10 * time.Minute,
		ScalingFarOver:   1.5,
		ScalingBaseline:  6 * time.Hour,
		FootprintRatio:   1.5,
		SlowScaling:      10 * time.Minute,
		TTFTHigh:         2 * time.Second,
		TTFTMin:          500 * time.Millisecond,
		TTFTRiseRatio:    2,
		LatencyNormal:    1.5,
		GPUMemWarnPct:    95,
		GPUMemCritPct:    98,
		GPUTempHot:       85,
		VRAMGrowthPct:    5,
		VRAMCreepPct:     1,
		VRAMGrowthR2:     0.8,
		TimeToFullCrit:   24 * time.Hour,
		VRAMDropPct:      30,
		VRAMDropWithin:   5 * time.Minute,
		AZNoTrafficShare: 0.1,
		AZSkewRatio:      3,
		AZMinInvocations: 10,
		VendedWindow:     time.Hour,
		ColdStartSlow:    5 * time.Minute,
		ColdStartShare:   0.5,
		ThroughputRatio:  0.3,
		ThroughputMin:    1,
		ErrorRateWarn:    0.01,
		ErrorRateCrit:    0.05,
		ErrorSpikeRatio:  3,
		ErrorMinCount:    10,

		IdleInfoUSDPerDay:      24,  // a dollar an hour
		IdleWarnUSDPerDay:      240, // ten dollars an hour: about one ml.g5.12xlarge idle all day
		IdleQuietTokensPerHour: 100, // under 0.03 tokens a second: nothing served
	}
}

// InferredOverload is how long load must stay above ScalingRise × its usual level, without the
// IC's policy target, to count as overload: longer than ScalingOverload, because ordinary
// bursts cross an inferred threshold.
func (c Config) InferredOverload() time.Duration { return 3 * c.ScalingOverload }

// Validate reports the first setting that cannot work, naming the field and the fix.
func (c Config) Validate() error {
	positive := []struct {
		name string
		v    float64
	}{
		{"Concurrency", float64(c.Concurrency)},
		{"MaxPoints", float64(c.MaxPoints)},
		{"SeriesLimit", float64(c.SeriesLimit)},
		{"MinStep", float64(c.MinStep)},
		{"RateWindow", float64(c.RateWindow)},
		{"Sustain", float64(c.Sustain)},
		{"SustainFast", float64(c.SustainFast)},
		{"WaitingRequests", c.WaitingRequests},
		{"ScalingRise", c.ScalingRise},
		{"ScalingOverload", float64(c.ScalingOverload)},
		{"ScalingFarOver", c.ScalingFarOver},
		{"SlowScaling", float64(c.SlowScaling)},
		{"TTFTHigh", float64(c.TTFTHigh)},
		{"TTFTRiseRatio", c.TTFTRiseRatio},
		{"LatencyNormal", c.LatencyNormal},
		{"GPUTempHot", c.GPUTempHot},
		{"VRAMGrowthPct", c.VRAMGrowthPct},
		{"VRAMCreepPct", c.VRAMCreepPct},
		{"TimeToFullCrit", float64(c.TimeToFullCrit)},
		{"VRAMDropPct", c.VRAMDropPct},
		{"VRAMDropWithin", float64(c.VRAMDropWithin)},
		{"AZSkewRatio", c.AZSkewRatio},
		{"VendedWindow", float64(c.VendedWindow)},
		{"ColdStartSlow", float64(c.ColdStartSlow)},
		{"ErrorRateWarn", c.ErrorRateWarn},
		{"ErrorRateCrit", c.ErrorRateCrit},
		{"ErrorSpikeRatio", c.ErrorSpikeRatio},
	}
	for _, p := range positive {
		if !(p.v > 0) {
			return fmt.Errorf("diagnosis config: %s must be greater than zero (got %v); start from DefaultConfig()", p.name, p.v)
		}
	}
	ratios := []struct {
		name string
		v    float64
	}{
		{"KVQuantile", c.KVQuantile},
		{"KVSaturation", c.KVSaturation},
		{"KVEarlyWarning", c.KVEarlyWarning},
		{"VRAMGrowthR2", c.VRAMGrowthR2},
		{"AZNoTrafficShare", c.AZNoTrafficShare},
		{"ColdStartShare", c.ColdStartShare},
		{"ThroughputRatio", c.ThroughputRatio},
	}
	for _, r := range ratios {
		if !(r.v > 0 && r.v <= 1) {
			return fmt.Errorf("diagnosis config: %s is a ratio and must be in (0, 1] (got %v)", r.name, r.v)
		}
	}
	if !(c.FootprintRatio >= 1) {
		return fmt.Errorf("diagnosis config: FootprintRatio is a factor either way and must be at least 1 (got %v)", c.FootprintRatio)
	}
	if c.ScalingBaseline > 18*time.Hour {
		return fmt.Errorf("diagnosis config: ScalingBaseline %s is too long: with a 6-day range it must stay within CloudWatch's 7 days; use 18h or less", c.ScalingBaseline)
	}
	if c.SustainFast > c.Sustain {
		return fmt.Errorf("diagnosis config: SustainFast (%s) must not exceed Sustain (%s): it is the fast window", c.SustainFast, c.Sustain)
	}
	if c.KVEarlyWarning > c.KVSaturation {
		return errors.New("diagnosis config: KVEarlyWarning must not exceed KVSaturation")
	}
	if !(c.GPUMemWarnPct > 0 && c.GPUMemWarnPct <= c.GPUMemCritPct && c.GPUMemCritPct <= 100) {
		return fmt.Errorf("diagnosis config: need 0 < GPUMemWarnPct (%v) <= GPUMemCritPct (%v) <= 100", c.GPUMemWarnPct, c.GPUMemCritPct)
	}
	if c.ErrorRateWarn > c.ErrorRateCrit {
		return errors.New("diagnosis config: ErrorRateWarn must not exceed ErrorRateCrit")
	}
	if c.ScalingBaseline < 0 || c.ErrorMinCount < 0 || c.TTFTMin < 0 || c.ThroughputMin < 0 || c.MaxFindingsPerRule < 0 {
		return errors.New("diagnosis config: ScalingBaseline, ErrorMinCount, TTFTMin, ThroughputMin and MaxFindingsPerRule must not be negative")
	}
	return nil
}
