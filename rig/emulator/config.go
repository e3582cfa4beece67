package emulator

import (
	"fmt"
	"math"
	"time"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
)

// Config configures a Server. The zero value is usable for unit tests: no signature
// checks, CloudWatch's documented limits, no faults.
type Config struct {
	// Region is the AWS region the emulator stands in for; when Verifier has no region
	// of its own it takes this one.
	Region string
	// Verifier checks every request's SigV4 signature before anything else; nil
	// disables the check and is meant for unit tests only.
	Verifier *sigv4verify.Verifier
	Limits   Limits
	Faults   Faults
	// NameValuesDisabled makes /api/v1/label/__name__/values answer 404, the behaviour
	// one field report saw (open question Q1 of the CloudWatch notes).
	NameValuesDisabled bool
	// Now is the default `time` of instant queries; nil means time.Now. Tests pin it
	// to the end of their data.
	Now func() time.Time
	// ControlPlane, when set, serves CloudWatch alarm and SageMaker calls on the same
	// listener; each is verified for its own SigV4 service with a copy of Verifier.
	ControlPlane ControlPlane
	// Deny lists IAM actions of the control plane (e.g. "sagemaker:ListEndpoints") that
	// are answered AccessDenied, to test permission paths.
	Deny []string
	// Verified, when set, is told the outcome of every signature check (nil: the request
	// verified), data and control plane alike; the stack counts them per region.
	Verified func(error)
	// Account is the caller's account: it is named in AccessDenied messages and its
	// CloudWatch limits are shared through Accounts. Empty: 123456789012.
	Account string
	// Accounts, when set, holds the query and discovery rate and concurrency gates of
	// Account: every Server given the same registry and account enforces Limits' TPS and
	// concurrency together, as CloudWatch does per account across regions and callers. The
	// first Server of an account builds its gates (with its RateClock); later ones must
	// ask for the same limits. Nil: this Server has gates of its own.
	Accounts *Accounts
	// RateClock drives the TPS token buckets; nil means time.Now. It is separate from
	// Now so that a pinned query time does not freeze the buckets, and tests drive it
	// to throttle deterministically.
	RateClock func() time.Time
}

// Limits are CloudWatch's documented service limits (CloudWatch-PromQL limits table).
// A zero field takes the documented default; TPS and concurrency fields below zero
// switch that limiter off.
type Limits struct {
	// QuerySeries is the largest and the default `limit` of /query and /query_range.
	QuerySeries int
	// DiscoverySeries is the largest and the default `limit` of /series, /labels and
	// /label/<name>/values.
	DiscoverySeries int
	// ClampLimit clamps an out-of-range `limit` to the allowed range instead of
	// rejecting it with 400 (CloudWatch's behaviour is open question Q2).
	ClampLimit bool
	// MaxRange bounds the time a query reads: end-start plus range-selector windows,
	// offsets and the lookback delta.
	MaxRange time.Duration
	// Timeout bounds engine execution.
	Timeout time.Duration
	// SeriesScannedPerDay and SamplesScannedPerDay cap what one query reads, per
	// started 24 h of the time it reads (CloudWatch's scan limits). Counting costs
	// engine time (about 1.5× on range queries); both below zero switch it off.
	SeriesScannedPerDay, SamplesScannedPerDay int64
	// LookbackDelta is the engine's staleness window (undocumented by AWS; Prometheus'
	// default).
	LookbackDelta time.Duration
	// MaxPointsPerSeries bounds (end-start)/step of a range query, as Prometheus does.
	MaxPointsPerSeries int
	// QueryTPS and DiscoveryTPS are per-account request rates (token buckets whose burst
	// equals the rate).
	QueryTPS, DiscoveryTPS float64
	// QueryConcurrency and DiscoveryConcurrency bound requests in flight.
	QueryConcurrency, DiscoveryConcurrency int
}

// DefaultLimits returns CloudWatch's documented limits.
func DefaultLimits() Limits {
	return Limits{
		QuerySeries:          500,
		DiscoverySeries:      10000,
		MaxRange:             7 * 24 * time.Hour,
		Timeout:              20 * time.Second,
		SeriesScannedPerDay:  100_000,
		SamplesScannedPerDay: 300_000_000,
		LookbackDelta:        5 * time.Minute,
		MaxPointsPerSeries:   11000,
		QueryTPS:             300,
		DiscoveryTPS:         10,
		QueryConcurrency:     30,
		DiscoveryConcurrency: 30,
	}
}

// scanCaps reports whether the engine must count series and samples read.
func (l Limits) scanCaps() bool { return l.SeriesScannedPerDay > 0 || l.SamplesScannedPerDay > 0 }

// withDefaults fills zero fields from DefaultLimits and rejects nonsense values.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	fillInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fillDur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	fillFloat := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	fillInt(&l.QuerySeries, d.QuerySeries)
	fillInt(&l.DiscoverySeries, d.DiscoverySeries)
	fillInt(&l.MaxPointsPerSeries, d.MaxPointsPerSeries)
	fillInt(&l.QueryConcurrency, d.QueryConcurrency)
	fillInt(&l.DiscoveryConcurrency, d.DiscoveryConcurrency)
	fillDur(&l.MaxRange, d.MaxRange)
	fillDur(&l.Timeout, d.Timeout)
	fillDur(&l.LookbackDelta, d.LookbackDelta)
	fillFloat(&l.QueryTPS, d.QueryTPS)
	fillInt64 := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	fillInt64(&l.SeriesScannedPerDay, d.SeriesScannedPerDay)
	fillInt64(&l.SamplesScannedPerDay, d.SamplesScannedPerDay)
	fillFloat(&l.DiscoveryTPS, d.DiscoveryTPS)

	switch {
	case l.QuerySeries < 0 || l.DiscoverySeries < 0:
		return l, fmt.Errorf("limits: series limits must be positive (got query %d, discovery %d)", l.QuerySeries, l.DiscoverySeries)
	case l.MaxPointsPerSeries < 0:
		return l, fmt.Errorf("limits: MaxPointsPerSeries must be positive, got %d", l.MaxPointsPerSeries)
	case l.MaxRange < 0 || l.Timeout < 0 || l.LookbackDelta < 0:
		return l, fmt.Errorf("limits: MaxRange, Timeout and LookbackDelta must be positive durations")
	case math.IsNaN(l.QueryTPS) || math.IsNaN(l.DiscoveryTPS):
		return l, fmt.Errorf("limits: TPS must be a number")
	}
	return l, nil
}

// Faults inject failures for client tests. The zero value injects nothing.
type Faults struct {
	// TPS > 0 answers 422 to requests beyond N per second (all routes together).
	TPS float64
	// Concurrency > 0 answers 429 to requests beyond M in flight.
	Concurrency int
	// Latency is added before each request is handled.
	Latency time.Duration
	// ErrorRate is the fraction (0–1) of requests answered with 503.
	ErrorRate float64
	// TruncateRate is the fraction of responses whose body stops half way while the
	// Content-Length promises all of it (the client sees an unexpected EOF).
	TruncateRate float64
	// MalformedRate is the fraction of responses whose 200 body is not valid JSON.
	MalformedRate float64
	// Seed makes the rate-based faults repeat for the same request sequence.
	Seed int64
}

func (f Faults) validate() error {
	for name, r := range map[string]float64{"ErrorRate": f.ErrorRate, "TruncateRate": f.TruncateRate, "MalformedRate": f.MalformedRate} {
		if !(r >= 0 && r <= 1) {
			return fmt.Errorf("faults: %s must be between 0 and 1, got %v", name, r)
		}
	}
	if f.TPS < 0 || math.IsNaN(f.TPS) || f.Concurrency < 0 || f.Latency < 0 {
		return fmt.Errorf("faults: TPS, Concurrency and Latency must not be negative")
	}
	return nil
}
