package models

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// The bounds of the resource settings (their defaults: defaults.go).
const (
	sizeMiBLimit          = 64 << 10
	maxCacheRefetchWindow = 6 * time.Hour
	maxCacheFreshFor      = 10 * time.Minute
	maxCostPerMillion     = 1000
)

// Resources are the settings that bound what the plugin holds and spends.
type Resources struct {
	CacheSizeMiB          int           `json:"cacheSizeMiB"` // 0: no results cache
	CacheRefetchWindow    time.Duration `json:"cacheRefetchWindow"`
	CacheFreshFor         time.Duration `json:"cacheFreshFor"`
	CostPerMillionSamples float64       `json:"costPerMillionSamples"`
}

// resourcesJSON is their part of the stored jsonData.
type resourcesJSON struct {
	CacheSizeMiB          json.RawMessage `json:"cacheSizeMiB"`
	CacheRefetchWindow    string          `json:"cacheRefetchWindow"`
	CacheFreshFor         string          `json:"cacheFreshFor"`
	CostPerMillionSamples json.RawMessage `json:"costPerMillionSamples"`
}

// load fills r from jd, defaults for what is missing; each error names the key and a fix.
func (r *Resources) load(jd resourcesJSON) []error {
	var errs []error
	numbers := []struct {
		key      string
		raw      json.RawMessage
		def      float64
		lo, hi   float64
		whole    bool
		set      func(float64)
		unitHint string
	}{
		{"cacheSizeMiB", jd.CacheSizeMiB, DefaultCacheSizeMiB, 0, sizeMiBLimit, true,
			func(v float64) { r.CacheSizeMiB = int(v) }, "a whole number of MiB (0 turns the cache off)"},
		{"costPerMillionSamples", jd.CostPerMillionSamples, DefaultCostPerMillionSamples, 0, maxCostPerMillion, false,
			func(v float64) { r.CostPerMillionSamples = v }, "a price in USD"},
	}
	for _, n := range numbers {
		n.set(n.def)
		v, ok, err := number(n.key, n.raw)
		switch {
		case err != nil:
			errs = append(errs, err)
		case !ok:
		case v < n.lo || v > n.hi || (n.whole && v != math.Trunc(v)):
			errs = append(errs, fmt.Errorf("jsonData.%s %v is out of range: use %s from %g to %g (default %g)", n.key, v, n.unitHint, n.lo, n.hi, n.def))
		default:
			n.set(v)
		}
	}
	durations := []struct {
		key, raw, example string
		dst               *time.Duration
		def, limit        time.Duration
		zero              time.Duration // what "0s" stands for
	}{
		{"cacheRefetchWindow", jd.CacheRefetchWindow, "10m", &r.CacheRefetchWindow, DefaultCacheRefetchWindow, maxCacheRefetchWindow, 0},
		{"cacheFreshFor", jd.CacheFreshFor, `"step" (the default) or 90s`, &r.CacheFreshFor, DefaultCacheFreshFor, maxCacheFreshFor, CacheFreshNever},
	}
	for _, f := range durations {
		*f.dst = f.def
		if f.raw == "" || (f.dst == &r.CacheFreshFor && f.raw == freshOneStepWord) {
			continue
		}
		d, err := ParseDuration(f.raw)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("jsonData.%s: %w", f.key, err))
		case d < 0 || d > f.limit:
			errs = append(errs, fmt.Errorf("jsonData.%s %q is out of range: use a duration from 0s to %s, such as %s", f.key, f.raw, FormatDuration(f.limit), f.example))
		case d == 0:
			*f.dst = f.zero
		default:
			*f.dst = d
		}
	}
	return errs
}

// freshOneStepWord spells CacheFreshOneStep in jsonData.cacheFreshFor.
const freshOneStepWord = "step"

// formatFresh spells a CacheFreshFor value as jsonData.cacheFreshFor stores it.
func formatFresh(d time.Duration) string {
	if d == CacheFreshOneStep {
		return freshOneStepWord
	}
	return FormatDuration(d) // CacheFreshNever: "0s"
}

func (r Resources) String() string {
	return fmt.Sprintf("cacheSizeMiB=%d cacheRefetchWindow=%s cacheFreshFor=%s costPerMillionSamples=%g",
		r.CacheSizeMiB, FormatDuration(r.CacheRefetchWindow), formatFresh(r.CacheFreshFor), r.CostPerMillionSamples)
}
