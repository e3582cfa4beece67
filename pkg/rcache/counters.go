package rcache

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The cache's counters: the snapshot (Stats) a test or the query inspector reads, and the
// process-wide Prometheus metrics the plugin SDK serves to Grafana.

// Stats are the cache's counters since it was built.
type Stats struct {
	Hits, Partials, Misses, Bypasses, Evictions int64
	FailuresReused                              int64 // failures given again without a call
	Fetches, FetchedPoints                      int64
	Bytes, Entries                              int64
	// The shared store (Options.Peer): requests served with another replica's fetch
	// (outcome SharedHit), requests whose use of the store failed (served as without
	// it), and fetched extents and instant answers not shared (native histograms, notices,
	// off the grid; scalars and strings).
	SharedHits, StoreErrors, KeptLocal int64
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Bytes, st.Entries = c.bytes, int64(len(c.entries))
	return st
}

func (c *Cache) count(f func(*Stats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
	var delta Stats
	f(&delta)
	publish(delta)
}

// Describe is a short line for the query inspector.
func (r Result) Describe() string {
	return "cache " + string(r.Outcome) + ", " + strconv.Itoa(r.Fetches) + " upstream call(s), " + strconv.FormatInt(r.Points, 10) + " points fetched"
}

// Process-wide counters on the default registry, which the plugin SDK serves to Grafana.
var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "requests_total",
		Help: "Range queries and lookups served by the results cache, by outcome (hit, shared hit, partial, miss, bypass, failure_reused).",
	}, []string{"outcome"})
	fetches = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "upstream_fetches_total",
		Help: "Upstream calls the results cache made.",
	})
	fetchedPoints = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "fetched_points_total",
		Help: "Points fetched upstream by the results cache.",
	})
	evictions = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "inferscope", Subsystem: "results_cache", Name: "evictions_total",
		Help: "Entries evicted to keep the results cache within its byte limit.",
	})
)

func init() {
	for _, c := range []prometheus.Collector{requests, fetches, fetchedPoints, evictions} {
		// Registered once per process; a second registration (tests) is harmless.
		_ = prometheus.DefaultRegisterer.Register(c)
	}
}

func publish(d Stats) {
	for outcome, n := range map[Outcome]int64{Hit: d.Hits, SharedHit: d.SharedHits, Partial: d.Partials, Miss: d.Misses, Bypass: d.Bypasses, "failure_reused": d.FailuresReused} {
		if n > 0 {
			requests.WithLabelValues(string(outcome)).Add(float64(n))
		}
	}
	fetches.Add(float64(d.Fetches))
	fetchedPoints.Add(float64(d.FetchedPoints))
	evictions.Add(float64(d.Evictions))
}
