package models

//go:generate go run ../internal/frontendjson -o ../../src/defaults.json defaults

import (
	"encoding/json"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// The defaults of the settings: what an unset jsonData key means. Those of the PromQL client
// and the results cache are stated in those packages and named here; the config editor
// reads them all from src/defaults.json (DefaultsJSON).
const (
	// DefaultTimeInterval is CloudWatch's resolution: one sample per minute
	// (MetricPublishFrequencyInSeconds defaults to 60). A smaller min step makes
	// $__rate_interval shorter than two samples, and rate() panels come back empty.
	DefaultTimeInterval = 60 * time.Second
	DefaultQueryTimeout = 60 * time.Second
	DefaultHTTPMethod   = promclient.DefaultHTTPMethod
	// The client's and the cache's own defaults, where they are used.
	DefaultMaxConcurrency     = promclient.DefaultMaxConcurrency
	DefaultRequestsPerSecond  = promclient.DefaultRequestsPerSecond
	DefaultCacheSizeMiB       = rcache.DefaultSizeMiB
	DefaultCacheRefetchWindow = rcache.DefaultRefetchWindow
	DefaultCacheFreshFor      = rcache.DefaultFresh
	// DefaultCostPerMillionSamples is the price of PromQL API queries as third parties
	// report it (docs/cloudwatch-promql.md, marked [T]); AWS's pricing page only says
	// "per million samples scanned". Configurable, for the query inspector's estimate.
	DefaultCostPerMillionSamples = 0.01
)

// CacheFreshFor values (jsonData.cacheFreshFor), as the results cache reads them.
const (
	CacheFreshOneStep = rcache.FreshOneStep
	CacheFreshNever   = rcache.FreshNever
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
