package models

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/interval"
)

// Defaults of the resource settings.
const (
	// DefaultCacheSizeMiB bounds the results cache; 0 turns it off.
	DefaultCacheSizeMiB = 256
	// DefaultCacheRefetchWindow: the newest part of an answer is fetched again on refresh
	// until it is this old, since CloudWatch data can arrive minutes late.
	DefaultCacheRefetchWindow = 10 * time.Minute
	// CacheFreshOneStep is cacheFreshFor's default ("step"): an answer is reused until the
	// second boundary of its step passes after it was fetched (the instant queries' step
	// is timeInterval). CloudWatch publishes once per period and a step is at least that
	// long, so a refreshed panel lacks at most its newest point. A duration instead reuses
	// answers for that long; 0s never.
	CacheFreshOneStep    time.Duration = -1
	DefaultCacheFreshFor               = CacheFreshOneStep
	// DefaultCostPerMillionSamples is the price of PromQL API queries as third parties
	// report it (docs/cloudwatch-promql.md, marked [T]); AWS's pricing page only says
	// "per million samples scanned". Configurable, for the query inspector's estimate.
	DefaultCostPerMillionSamples = 0.01

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
	}{
		{"cacheRefetchWindow", jd.CacheRefetchWindow, "10m", &r.CacheRefetchWindow, DefaultCacheRefetchWindow, maxCacheRefetchWindow},
		{"cacheFreshFor", jd.CacheFreshFor, `"step" (the default) or 90s`, &r.CacheFreshFor, DefaultCacheFreshFor, maxCacheFreshFor},
	}
	for _, f := range durations {
		*f.dst = f.def
		if f.raw == "" || (f.dst == &r.CacheFreshFor && f.raw == freshOneStepWord) {
			continue
		}
		d, err := interval.ParseDuration(f.raw)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("jsonData.%s: %w", f.key, err))
		case d < 0 || d > f.limit:
			errs = append(errs, fmt.Errorf("jsonData.%s %q is out of range: use a duration from 0s to %s, such as %s", f.key, f.raw, interval.FormatDuration(f.limit), f.example))
		default:
			*f.dst = d
		}
	}
	return errs
}

// freshOneStepWord spells CacheFreshOneStep in jsonData.cacheFreshFor.
const freshOneStepWord = "step"

func (r Resources) String() string {
	fresh := freshOneStepWord
	if r.CacheFreshFor != CacheFreshOneStep {
		fresh = interval.FormatDuration(r.CacheFreshFor)
	}
	return fmt.Sprintf("cacheSizeMiB=%d cacheRefetchWindow=%s cacheFreshFor=%s costPerMillionSamples=%g",
		r.CacheSizeMiB, interval.FormatDuration(r.CacheRefetchWindow), fresh, r.CostPerMillionSamples)
}
