package interval

import (
	"errors"
	"fmt"
	"time"
)

const (
	// DefaultMinInterval applies when neither the query, the request nor the datasource
	// names a minimum step (Grafana's default scrape interval).
	DefaultMinInterval = 15 * time.Second
	// DefaultMaxDataPoints stands in for a request that carries maxDataPoints 0.
	DefaultMaxDataPoints = 1500
	// SafeResolution is Prometheus' limit of points per series in a range query; the step
	// never drops below range/SafeResolution (rounded).
	SafeResolution = 11000
)

// roundingTable is Grafana's "nice interval" table: a raw interval up to and including
// the limit (the last row: strictly below it) becomes the value. The limits sit halfway
// between neighbouring nice values, so a raw interval snaps to the nearest of them.
var roundingTable = []struct{ limit, value time.Duration }{
	{10 * time.Millisecond, time.Millisecond},
	{15 * time.Millisecond, 10 * time.Millisecond},
	{35 * time.Millisecond, 20 * time.Millisecond},
	{75 * time.Millisecond, 50 * time.Millisecond},
	{150 * time.Millisecond, 100 * time.Millisecond},
	{350 * time.Millisecond, 200 * time.Millisecond},
	{750 * time.Millisecond, 500 * time.Millisecond},
	{1500 * time.Millisecond, time.Second},
	{3500 * time.Millisecond, 2 * time.Second},
	{7500 * time.Millisecond, 5 * time.Second},
	{12500 * time.Millisecond, 10 * time.Second},
	{17500 * time.Millisecond, 15 * time.Second},
	{25 * time.Second, 20 * time.Second},
	{45 * time.Second, 30 * time.Second},
	{90 * time.Second, time.Minute},
	{210 * time.Second, 2 * time.Minute},
	{450 * time.Second, 5 * time.Minute},
	{750 * time.Second, 10 * time.Minute},
	{1050 * time.Second, 15 * time.Minute},
	{1500 * time.Second, 20 * time.Minute},
	{2700 * time.Second, 30 * time.Minute},
	{90 * time.Minute, time.Hour},
	{150 * time.Minute, 2 * time.Hour},
	{270 * time.Minute, 3 * time.Hour},
	{9 * time.Hour, 6 * time.Hour},
	{24 * time.Hour, 12 * time.Hour},
	{48 * time.Hour, 24 * time.Hour},
	{week, 24 * time.Hour},
	{3 * week, week},
}

// roundingLastLimit closes the table: below two years the nice value is 30 days, from
// there on one year. This row alone is exclusive, as in Grafana.
const roundingLastLimit = 2 * year

// Round snaps a raw interval to the nearest "nice" value, as Grafana does before it uses a
// calculated interval as a step.
func Round(d time.Duration) time.Duration {
	for _, r := range roundingTable {
		if d <= r.limit {
			return r.value
		}
	}
	if d < roundingLastLimit {
		return 30 * day
	}
	return year
}

// Params is everything the step depends on. The plugin fills it from the query model, the
// request and the datasource settings.
type Params struct {
	From, To time.Time
	// MaxDataPoints from the request; 0 means DefaultMaxDataPoints.
	MaxDataPoints int64
	// RequestInterval is the interval Grafana computed for the panel (intervalMs), the
	// frontend's $__interval. 0 when the request carries none.
	RequestInterval time.Duration
	// QueryInterval is the query's own "Min step" as typed ("", "30s", "$__rate_interval").
	QueryInterval string
	// ScrapeInterval is the datasource's timeInterval setting; 0 when unset.
	ScrapeInterval time.Duration
	// IntervalFactor multiplies the step (deprecated "Resolution" option); <1 means 1.
	IntervalFactor int64
}

// Result is the outcome of Compute: the step sent to Prometheus and the values the
// $__ variables expand to.
type Result struct {
	// Step is the final step of a range query.
	Step time.Duration
	// MinInterval is the lower bound the calculation started from.
	MinInterval time.Duration
	// RateInterval is what $__rate_interval expands to.
	RateInterval time.Duration
	// Range is To-From, what $__range expands to (rounded to seconds on expansion).
	Range time.Duration
}

// IsVariable reports whether a "Min step" is itself a Grafana interval variable; such a
// value carries no minimum of its own.
func IsVariable(s string) bool {
	switch s {
	case "$__interval", "${__interval}", "$__interval_ms", "${__interval_ms}",
		"$__rate_interval", "${__rate_interval}", "$__rate_interval_ms", "${__rate_interval_ms}":
		return true
	}
	return false
}

func isRateVariable(s string) bool {
	return s == "$__rate_interval" || s == "${__rate_interval}"
}

// MinInterval applies Grafana's precedence for the lower bound of the step: the query's
// own min step unless it is empty, "0s" or a variable; then the request interval; then the
// datasource scrape interval; then DefaultMinInterval.
func MinInterval(queryInterval string, requestInterval, scrapeInterval time.Duration) (time.Duration, error) {
	if queryInterval != "" && queryInterval != "0s" && !IsVariable(queryInterval) {
		d, err := ParseDuration(queryInterval)
		if err != nil {
			return 0, fmt.Errorf("query min step: %w", err)
		}
		if d > 0 {
			return d, nil
		}
	}
	if requestInterval > 0 {
		return requestInterval, nil
	}
	if scrapeInterval > 0 {
		return scrapeInterval, nil
	}
	return DefaultMinInterval, nil
}

// scrape is the sample spacing $__rate_interval is built on: the query's min step when it
// names one, else the datasource scrape interval, else the default.
func scrape(queryInterval string, step, scrapeInterval time.Duration) time.Duration {
	switch {
	case queryInterval == "$__interval" || queryInterval == "${__interval}":
		return step
	case queryInterval != "" && !IsVariable(queryInterval):
		if d, err := ParseDuration(queryInterval); err == nil && d > 0 {
			return d
		}
	}
	if scrapeInterval > 0 {
		return scrapeInterval
	}
	return DefaultMinInterval
}

// rateInterval is max(interval + scrape, 4 * scrape): long enough that a rate() window
// always holds at least four samples and never misses one between steps.
func rateInterval(interval, scrape time.Duration) time.Duration {
	return max(interval+scrape, 4*scrape)
}

// Compute works out the step of a range query and the values of the $__ variables.
func Compute(p Params) (Result, error) {
	if p.To.Before(p.From) {
		return Result{}, errors.New("time range ends before it starts: pick a range whose end is after its start")
	}
	minInterval, err := MinInterval(p.QueryInterval, p.RequestInterval, p.ScrapeInterval)
	if err != nil {
		return Result{}, err
	}
	span := p.To.Sub(p.From)
	points := p.MaxDataPoints
	if points <= 0 {
		points = DefaultMaxDataPoints
	}
	calculated := span / time.Duration(points)
	if calculated < minInterval {
		calculated = minInterval
	} else {
		calculated = Round(calculated)
	}
	step := max(calculated, Round(span/SafeResolution))

	res := Result{MinInterval: minInterval, Range: span}
	if isRateVariable(p.QueryInterval) {
		// A step of $__rate_interval is final: the resolution factor does not apply.
		res.Step = rateInterval(step, scrape("", step, p.ScrapeInterval))
		res.RateInterval = res.Step
		return res, nil
	}
	factor := max(p.IntervalFactor, 1)
	res.Step = step * time.Duration(factor)
	if res.Step/time.Duration(factor) != step {
		return Result{}, fmt.Errorf("interval factor %d makes the step overflow: use a factor of 1 to 10", factor)
	}
	res.RateInterval = rateInterval(p.RequestInterval, scrape(p.QueryInterval, res.Step, p.ScrapeInterval))
	return res, nil
}

// Align floors t to a multiple of step in the time zone utcOffsetSec seconds east of UTC,
// so that consecutive refreshes ask for the same timestamps (cache-friendly) and daily
// steps start at local midnight. Only range queries are aligned.
func Align(t time.Time, step time.Duration, utcOffsetSec int64) time.Time {
	if step <= 0 {
		return t
	}
	offset := utcOffsetSec * int64(time.Second)
	ns := t.UnixNano() + offset
	s := int64(step)
	floored := ns / s * s
	if ns%s < 0 {
		floored -= s
	}
	return time.Unix(0, floored-offset).UTC()
}
