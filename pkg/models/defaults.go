package models

//go:generate go run ../internal/frontendjson -o ../../src/defaults.json defaults

import (
	"encoding/json"
	"net/http"
	"time"
)

// The defaults of the settings: what an unset jsonData key means. They are stated here only;
// promclient and rcache fill their zero options from them, and the config editor reads them
// from src/defaults.json (DefaultsJSON).
const (
	// DefaultTimeInterval is CloudWatch's resolution: one sample per minute
	// (MetricPublishFrequencyInSeconds defaults to 60). A smaller min step makes
	// $__rate_interval shorter than two samples, and rate() panels come back empty.
	DefaultTimeInterval = 60 * time.Second
	DefaultQueryTimeout = 60 * time.Second
	DefaultHTTPMethod   = http.MethodPost
	// DefaultMaxConcurrency and DefaultRequestsPerSecond keep one data source well below
	// CloudWatch's per-account limits (30 concurrent, 300 per second), leaving room for
	// other clients. The limiter never sends more than requestsPerSecond in any one-second
	// window, so its token buckets give about 14 at once and 18 a second after that at 30
	// (docs/benchmarks.md, "Renovation").
	DefaultMaxConcurrency    = 10
	DefaultRequestsPerSecond = 30
	// DefaultCacheSizeMiB bounds each data source's results cache; 0 turns it off. The cache
	// keeps decoded samples, about a quarter of the answers' JSON: the three dashboards of a
	// 200-instance fleet over 6 h (50 MB of JSON) keep about 13 MB, so 128 MiB holds some ten
	// such views (other ranges, steps, viewers), and a full cache with the plugin's GC
	// headroom stays under 200 MB beside Grafana on its host (docs/configure.md).
	DefaultCacheSizeMiB = 128
	// DefaultCacheRefetchWindow: the newest part of an answer is fetched again on refresh
	// until it is this old, since CloudWatch data can arrive minutes late.
	DefaultCacheRefetchWindow = 10 * time.Minute
	DefaultCacheFreshFor      = CacheFreshOneStep
	// DefaultCostPerMillionSamples is the price of PromQL API queries as third parties
	// report it (docs/cloudwatch-promql.md, marked [T]); AWS's pricing page only says
	// "per million samples scanned". Configurable, for the query inspector's estimate.
	DefaultCostPerMillionSamples = 0.01
)

// CacheFreshFor values (jsonData.cacheFreshFor), as the results cache reads them: a positive
// duration reuses an answer for that long after it was fetched.
const (
	// CacheFreshOneStep ("step", the zero value): an answer is reused until the second
	// boundary of its step passes after it was fetched (the instant queries' step is
	// timeInterval). CloudWatch publishes once per period and a step is at least that long,
	// so a refreshed panel lacks at most its newest point.
	CacheFreshOneStep time.Duration = 0
	// CacheFreshNever ("0s"): every request fetches its new tail and the re-fetch window.
	CacheFreshNever time.Duration = -1
)

// CloudWatch's per-account limits: 300 query requests per second, 30 concurrent requests
// of each kind. The settings accept no more.
const (
	AccountQueryTPS    = 300
	AccountConcurrency = 30
)

// DefaultsJSON is the defaults as the config editor reads them (src/defaults.json, written by
// go generate), each spelled as its jsonData key stores it.
func DefaultsJSON() ([]byte, error) {
	b, err := json.MarshalIndent(struct {
		TimeInterval          string  `json:"timeInterval"`
		QueryTimeout          string  `json:"queryTimeout"`
		HTTPMethod            string  `json:"httpMethod"`
		MaxConcurrency        int     `json:"maxConcurrency"`
		RequestsPerSecond     float64 `json:"requestsPerSecond"`
		CacheSizeMiB          int     `json:"cacheSizeMiB"`
		CacheRefetchWindow    string  `json:"cacheRefetchWindow"`
		CacheFreshFor         string  `json:"cacheFreshFor"`
		CostPerMillionSamples float64 `json:"costPerMillionSamples"`
	}{
		FormatDuration(DefaultTimeInterval), FormatDuration(DefaultQueryTimeout), DefaultHTTPMethod,
		DefaultMaxConcurrency, DefaultRequestsPerSecond,
		DefaultCacheSizeMiB, FormatDuration(DefaultCacheRefetchWindow), formatFresh(DefaultCacheFreshFor), DefaultCostPerMillionSamples,
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
