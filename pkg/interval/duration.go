// Package interval holds the step maths Grafana users know from the Prometheus datasource:
// the min-interval precedence, the max-data-points and safe-resolution calculation with
// Grafana's rounding table, $__interval / $__rate_interval / $__range interpolation and the
// alignment of range queries to the step. It is pure: no I/O, no clock, no SDK.
package interval

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

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
