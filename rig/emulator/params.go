package emulator

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

// Unbounded discovery ranges: a missing start/end on /labels reads all of storage.
var (
	minTime = time.UnixMilli(math.MinInt64 / 2)
	maxTime = time.UnixMilli(math.MaxInt64 / 2)
)

// parseTime reads a timestamp parameter as unix seconds (fractions allowed) or RFC 3339;
// an absent parameter yields def, or an error when def is the zero time (required).
func parseTime(r *http.Request, name string, def time.Time) (time.Time, *apiError) {
	v := r.Form.Get(name)
	if v == "" {
		if def.IsZero() {
			return time.Time{}, badData("missing parameter %q: give a unix timestamp in seconds or an RFC 3339 time", name)
		}
		return def, nil
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		// Bound the value so that the conversion to nanoseconds cannot overflow.
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 9e9 {
			return time.Time{}, badData("invalid parameter %q: cannot parse %q to a valid timestamp", name, v)
		}
		// Rounded to the millisecond, as Prometheus' API reads it: 1790000000.123 is not
		// exactly representable, and truncating its nanoseconds would evaluate (and stamp the
		// samples) a millisecond before the time asked.
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond)).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Time{}, badData("invalid parameter %q: cannot parse %q to a valid timestamp", name, v)
}

// parseDuration reads a duration parameter as float seconds or a Prometheus duration
// ("30s", "1h30m", "1d").
func parseDuration(r *http.Request, name string) (time.Duration, *apiError) {
	v := r.Form.Get(name)
	if v == "" {
		return 0, badData("missing parameter %q: give a duration such as 60s or a number of seconds", name)
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		ns := f * float64(time.Second)
		if math.IsNaN(ns) || ns > math.MaxInt64 || ns < math.MinInt64 {
			return 0, badData("invalid parameter %q: cannot parse %q to a valid duration. It overflows int64", name, v)
		}
		return time.Duration(ns), nil
	}
	if d, err := model.ParseDuration(v); err == nil {
		return time.Duration(d), nil
	}
	return 0, badData("invalid parameter %q: cannot parse %q to a valid duration", name, v)
}

// parseLimit reads `limit`, defaulting to ceiling; outside 1..ceiling it is rejected, or
// clamped when clamp is set.
func parseLimit(r *http.Request, ceiling int, clamp bool) (int, *apiError) {
	v := r.Form.Get("limit")
	if v == "" {
		return ceiling, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, badData("invalid parameter \"limit\": %q is not an integer; use a whole number from 1 to %d", v, ceiling)
	}
	if n >= 1 && n <= ceiling {
		return n, nil
	}
	if clamp {
		return min(max(n, 1), ceiling), nil
	}
	return 0, badData("invalid parameter \"limit\": %d is out of range; use a whole number from 1 to %d", n, ceiling)
}
