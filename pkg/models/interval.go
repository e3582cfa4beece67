package models

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The step maths Grafana users know from the Prometheus datasource: the min-interval
// precedence, the max-data-points and safe-resolution calculation with Grafana's rounding
// table, $__interval / $__rate_interval / $__range interpolation and the alignment of range
// queries to the step. Pure: no I/O, no clock, no SDK.

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

// RoundInterval snaps a raw interval to the nearest "nice" value, as Grafana does before it uses a
// calculated interval as a step.
func RoundInterval(d time.Duration) time.Duration {
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

// IntervalParams is everything the step depends on. The plugin fills it from the query model, the
// request and the datasource settings.
type IntervalParams struct {
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

// Interval is the outcome of ComputeInterval: the step sent to Prometheus and the values the
// $__ variables expand to.
type Interval struct {
	// Step is the final step of a range query.
	Step time.Duration
	// MinInterval is the lower bound the calculation started from.
	MinInterval time.Duration
	// RateInterval is what $__rate_interval expands to.
	RateInterval time.Duration
	// Range is To-From, what $__range expands to (rounded to seconds on expansion).
	Range time.Duration
}

// IsIntervalVariable reports whether a "Min step" is itself a Grafana interval variable; such a
// value carries no minimum of its own.
func IsIntervalVariable(s string) bool {
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
	if queryInterval != "" && queryInterval != "0s" && !IsIntervalVariable(queryInterval) {
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
	case queryInterval != "" && !IsIntervalVariable(queryInterval):
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

// ComputeInterval works out the step of a range query and the values of the $__ variables.
func ComputeInterval(p IntervalParams) (Interval, error) {
	if p.To.Before(p.From) {
		return Interval{}, errors.New("time range ends before it starts: pick a range whose end is after its start")
	}
	minInterval, err := MinInterval(p.QueryInterval, p.RequestInterval, p.ScrapeInterval)
	if err != nil {
		return Interval{}, err
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
		calculated = RoundInterval(calculated)
	}
	step := max(calculated, RoundInterval(span/SafeResolution))

	res := Interval{MinInterval: minInterval, Range: span}
	if isRateVariable(p.QueryInterval) {
		// A step of $__rate_interval is final: the resolution factor does not apply.
		res.Step = rateInterval(step, scrape("", step, p.ScrapeInterval))
		res.RateInterval = res.Step
		return res, nil
	}
	factor := max(p.IntervalFactor, 1)
	res.Step = step * time.Duration(factor)
	if res.Step/time.Duration(factor) != step {
		return Interval{}, fmt.Errorf("interval factor %d makes the step overflow: use a factor of 1 to 10", factor)
	}
	res.RateInterval = rateInterval(p.RequestInterval, scrape(p.QueryInterval, res.Step, p.ScrapeInterval))
	return res, nil
}

// AlignToStep floors t to a multiple of step in the time zone utcOffsetSec seconds east of UTC,
// so that consecutive refreshes ask for the same timestamps (cache-friendly) and daily
// steps start at local midnight. Only range queries are aligned.
func AlignToStep(t time.Time, step time.Duration, utcOffsetSec int64) time.Time {
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

// Interpolate expands Grafana's interval variables in expr, in both the $__name and
// ${__name} forms:
//
//	$__interval, $__interval_ms           the step
//	$__rate_interval, $__rate_interval_ms max(interval + scrape, 4 * scrape)
//	$__range, $__range_s, $__range_ms     To-From, rounded to whole seconds except _ms
//
// A variable is recognised by its whole name, so $__interval_ms is never read as
// $__interval followed by "_ms", and unknown names such as $__intervalX stay untouched.
func (r Interval) Interpolate(expr string) string {
	if !strings.Contains(expr, "$") {
		return expr
	}
	var b strings.Builder
	b.Grow(len(expr) + 16)
	for i := 0; i < len(expr); {
		j := strings.IndexByte(expr[i:], '$')
		if j < 0 {
			b.WriteString(expr[i:])
			break
		}
		b.WriteString(expr[i : i+j])
		i += j
		name, width := variableAt(expr[i:])
		if value, ok := r.value(name); ok {
			b.WriteString(value)
			i += width
			continue
		}
		b.WriteByte('$')
		i++
	}
	return b.String()
}

// variableAt reads a $name or ${name} reference at the start of s (which begins with '$')
// and returns the name and the number of bytes the reference spans. A ${ without its
// closing brace, or a $ followed by no name, gives an empty name.
func variableAt(s string) (string, int) {
	if strings.HasPrefix(s, "${") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0
		}
		return s[2:end], end + 1
	}
	n := 1
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	return s[1:n], n
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (r Interval) value(name string) (string, bool) {
	rangeSeconds := int64(math.Round(r.Range.Seconds()))
	switch name {
	case "__interval":
		return FormatDuration(r.Step), true
	case "__interval_ms":
		return strconv.FormatInt(r.Step.Milliseconds(), 10), true
	case "__rate_interval":
		return FormatDuration(r.RateInterval), true
	case "__rate_interval_ms":
		return strconv.FormatInt(r.RateInterval.Milliseconds(), 10), true
	case "__range":
		// Whole seconds, as Grafana's frontend renders it ("3600s").
		return strconv.FormatInt(rangeSeconds, 10) + "s", true
	case "__range_s":
		return strconv.FormatInt(rangeSeconds, 10), true
	case "__range_ms":
		return strconv.FormatInt(r.Range.Milliseconds(), 10), true
	}
	return "", false
}

const (
	day  = 24 * time.Hour
	week = 7 * day
	year = 365 * day
)

// units lists the suffixes ParseDuration accepts. Longer suffixes come first so that "ms"
// is not read as "m" followed by garbage.
var units = []struct {
	suffix string
	unit   time.Duration
}{
	{"ms", time.Millisecond},
	{"s", time.Second},
	{"m", time.Minute},
	{"h", time.Hour},
	{"d", day},
	{"w", week},
	{"y", year},
}

// ParseDuration reads an interval the way Grafana users type it into "Min step" or
// "Scrape interval": Prometheus durations ("15s", "1m30s", "1d", "2w", "1y"), decimal
// parts ("1.5m"), a bare number meaning seconds ("30"), and the legacy ">10s" / "<10s"
// prefixes, which are ignored. Negative values are rejected.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	in = strings.TrimLeft(in, "<>")
	in = strings.TrimSpace(in)
	if in == "" {
		return 0, fmt.Errorf("empty duration: use a number with a unit such as 15s, 1m or 1h30m")
	}
	if isPlainNumber(in) {
		secs, err := strconv.ParseFloat(in, 64)
		if err != nil {
			return 0, badDuration(s)
		}
		return fromNanos(s, secs*float64(time.Second))
	}
	var total float64
	rest := in
	for rest != "" {
		numEnd := 0
		for numEnd < len(rest) && (rest[numEnd] >= '0' && rest[numEnd] <= '9' || rest[numEnd] == '.') {
			numEnd++
		}
		if numEnd == 0 {
			return 0, badDuration(s)
		}
		n, err := strconv.ParseFloat(rest[:numEnd], 64)
		if err != nil {
			return 0, badDuration(s)
		}
		rest = rest[numEnd:]
		matched := false
		for _, u := range units {
			if strings.HasPrefix(rest, u.suffix) {
				total += n * float64(u.unit)
				rest = rest[len(u.suffix):]
				matched = true
				break
			}
		}
		if !matched {
			return 0, badDuration(s)
		}
	}
	return fromNanos(s, total)
}

// isPlainNumber accepts digits with an optional fraction; ParseFloat alone would also let
// through "NaN", "Inf", exponents and hex floats.
func isPlainNumber(s string) bool {
	dots := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '.':
			dots++
		case s[i] < '0' || s[i] > '9':
			return false
		}
	}
	return dots <= 1 && s != "."
}

func fromNanos(orig string, ns float64) (time.Duration, error) {
	if ns < 0 || math.IsNaN(ns) {
		return 0, fmt.Errorf("invalid duration %q: must not be negative; use a value such as 15s", orig)
	}
	if ns >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid duration %q: too large; use at most a few years, such as 1y", orig)
	}
	return time.Duration(ns), nil
}

func badDuration(orig string) error {
	return fmt.Errorf("invalid duration %q: use a number with a unit (ms, s, m, h, d, w, y) such as 15s, 1m or 1h30m", orig)
}

// FormatDuration renders d as a Prometheus duration that round-trips exactly: integer
// components from days down to milliseconds, zero components left out ("1m30s", "1d",
// "1s500ms"). Go's Duration.String would give "1m30s" but also "1.5s", which Prometheus
// rejects. Anything below a millisecond is dropped because Prometheus cannot express it.
func FormatDuration(d time.Duration) string {
	if d < time.Millisecond {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"d", day}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if n := d / u.unit; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10))
			b.WriteString(u.suffix)
			d -= n * u.unit
		}
	}
	return b.String()
}
