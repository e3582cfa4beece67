package diagnosis

import (
	"errors"
	"fmt"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Config holds what callers do change: the rules to run, the query shape, and the thresholds
// the alert rules share (dashboards/builder) or tests and cmd/diagnose tune; the others are
// constants (thresholds.go). DefaultConfig documents the defaults (also tabled in
// README.md); the plugin always runs them.
type Config struct {
	// Rules to run, by id (RuleIDs); empty runs all of them.
	Rules []string
	// Concurrency is the number of rules evaluated at once (each sends its own queries).
	Concurrency int
	// MaxPoints bounds the points per series of range queries; the step grows with the range.
	MaxPoints int
	// MinStep is the smallest range-query step (the metrics' publish period).
	MinStep time.Duration
	// SeriesLimit is the upstream's series cap per query (CloudWatch: 500); a result that
	// reaches it is reported as possibly truncated.
	SeriesLimit int

	// KV cache (ratio 0-1 per copy).
	KVQuantile       float64 // KV usage exceeded this share of the range is "running warm"
	KVSaturation     float64 // sustained usage at or above this is saturation
	WaitingRequests  float64 // average waiting requests that confirm requests queue
	ScalingRise      float64 // without the IC's policy (Region.Policies): load per copy this many times its usual level is overload
	ScalingOverload  time.Duration
	ScalingBaseline  time.Duration // how far before the range the usual load is read from
	TTFTHigh         time.Duration // P99 TTFT at or above this is high whatever its history
	LatencyNormal    float64       // model/overhead latency peak / usual below this is "normal"
	GPUMemWarnPct    float64       // framebuffer used % at or above this: warning
	GPUTempHot       float64       // °C: a GPU that stays above this runs hot (datacenter GPUs throttle from about 87 °C)
	TimeToFullCrit   time.Duration // a growth that fills VRAM sooner than this is critical
	VRAMDropPct      float64       // % of its level lost within VRAMDropWithin: a sudden drop
	VRAMDropWithin   time.Duration
	AZNoTrafficShare float64 // an AZ with instances getting less than this share of its fair traffic has "no traffic"
	AZMinInvocations float64 // fewer invocations per instance than this in a window are too few to judge an AZ's share
	ColdStartSlow    time.Duration
	ErrorRateCrit    float64 // 5xx or model error ratio of a spike: critical
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
		Concurrency: 4,
		MaxPoints:   240,
		MinStep:     time.Minute,
		SeriesLimit: promclient.MaxQueryLimit,

		KVQuantile:       0.9,
		KVSaturation:     0.9,
		WaitingRequests:  1,
		ScalingRise:      2,
		ScalingOverload:  10 * time.Minute,
		ScalingBaseline:  6 * time.Hour,
		TTFTHigh:         2 * time.Second,
		LatencyNormal:    1.5,
		GPUMemWarnPct:    95,
		GPUTempHot:       85,
		TimeToFullCrit:   24 * time.Hour,
		VRAMDropPct:      30,
		VRAMDropWithin:   5 * time.Minute,
		AZNoTrafficShare: 0.1,
		AZMinInvocations: 10,
		ColdStartSlow:    5 * time.Minute,
		ErrorRateCrit:    0.05,
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
		{"WaitingRequests", c.WaitingRequests},
		{"ScalingRise", c.ScalingRise},
		{"ScalingOverload", float64(c.ScalingOverload)},
		{"TTFTHigh", float64(c.TTFTHigh)},
		{"LatencyNormal", c.LatencyNormal},
		{"GPUTempHot", c.GPUTempHot},
		{"TimeToFullCrit", float64(c.TimeToFullCrit)},
		{"VRAMDropPct", c.VRAMDropPct},
		{"VRAMDropWithin", float64(c.VRAMDropWithin)},
		{"ColdStartSlow", float64(c.ColdStartSlow)},
		{"ErrorRateCrit", c.ErrorRateCrit},
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
		{"AZNoTrafficShare", c.AZNoTrafficShare},
	}
	for _, r := range ratios {
		if !(r.v > 0 && r.v <= 1) {
			return fmt.Errorf("diagnosis config: %s is a ratio and must be in (0, 1] (got %v)", r.name, r.v)
		}
	}
	if c.ScalingBaseline > 18*time.Hour {
		return fmt.Errorf("diagnosis config: ScalingBaseline %s is too long: with a 6-day range it must stay within CloudWatch's 7 days; use 18h or less", c.ScalingBaseline)
	}
	if kvEarlyWarning > c.KVSaturation {
		return fmt.Errorf("diagnosis config: KVSaturation must be at least the early warning level, %v", kvEarlyWarning)
	}
	if !(c.GPUMemWarnPct > 0 && c.GPUMemWarnPct <= gpuMemCritPct && gpuMemCritPct <= 100) {
		return fmt.Errorf("diagnosis config: need 0 < GPUMemWarnPct (%v) <= the critical level, %v", c.GPUMemWarnPct, gpuMemCritPct)
	}
	if errorRateWarn > c.ErrorRateCrit {
		return fmt.Errorf("diagnosis config: ErrorRateCrit must be at least the warning level, %v", errorRateWarn)
	}
	if c.ScalingBaseline < 0 || c.ErrorMinCount < 0 {
		return errors.New("diagnosis config: ScalingBaseline and ErrorMinCount must not be negative")
	}
	return nil
}
