package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// The browser tests' label values that are hard to quote: series of one SGLang metric (no
// other browser test reads SGLang) whose model_name holds quotes, backslashes, newlines and
// UTF-8, so ad-hoc filters and filter for/out are tested on what escaping gets wrong.

// filterMetric and filterLabel are where the generated values live.
const (
	filterMetric = semconv.SGLangRunning
	filterLabel  = semconv.LabelModelName
)

// Characters the values are drawn from; every value also gets each of hard.
var (
	plain = []rune("abcXYZ019-_ .,={}|$")
	hard  = []rune{'"', '\\', '\n', 'é', '日', '🚀'}
)

// filterValues returns n distinct values from seed: each holds a quote, a backslash, a
// newline and non-ASCII runes, among plain characters, in an order the seed picks.
func filterValues(seed int64, n int) []string {
	r := rand.New(rand.NewPCG(uint64(seed), 27)) // #nosec G115 G404 -- test data reproducible from a seed: bits reinterpreted, not a secret
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		// A leading "m<i>" keeps the values apart; the rest is shuffled.
		prefix := fmt.Sprintf("m%d", len(out))
		tail := slices.Clone(hard)
		for range 1 + r.IntN(6) {
			tail = append(tail, plain[r.IntN(len(plain))])
		}
		r.Shuffle(len(tail), func(i, j int) { tail[i], tail[j] = tail[j], tail[i] })
		v := prefix + string(tail)
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// sglangHome is the endpoint and inference component of the fleet's first SGLang model, so
// that an endpoint filter keeps the generated series; empty when the fleet runs none.
func sglangHome(f *fleet.Fleet) (endpoint, component string) {
	for _, e := range f.Endpoints {
		if e.Engine == semconv.FrameworkSGLang {
			return e.Name, ""
		}
		for _, ic := range e.InferenceComponents {
			if ic.Engine == semconv.FrameworkSGLang {
				return e.Name, ic.Name
			}
		}
	}
	return "", ""
}

// filterSeries are the label sets of the generated values in the fleet's account and region,
// on its first SGLang model's endpoint.
func filterSeries(values []string, f *fleet.Fleet, region string) []labels.Labels {
	endpoint, component := sglangHome(f)
	out := make([]labels.Labels, len(values))
	for i, v := range values {
		b := labels.NewScratchBuilder(8)
		for _, kv := range [][2]string{
			{labels.MetricName, filterMetric}, {semconv.LabelType, semconv.TypeGauge}, {filterLabel, v},
			{semconv.LabelAccount, f.Account}, {semconv.LabelRegion, region},
			{semconv.LabelEndpoint, endpoint}, {semconv.LabelInferenceComp, component},
		} {
			if kv[1] != "" {
				b.Add(kv[0], kv[1])
			}
		}
		b.Sort()
		out[i] = b.Labels()
	}
	return out
}

// appendFilterSeries writes one sample per step from from to to for each series; the value of
// series i is i+1, so each value's row is recognisable.
func appendFilterSeries(ctx context.Context, db storage.Appendable, series []labels.Labels, from, to time.Time, step time.Duration) error {
	app := db.Appender(ctx)
	for t := from; !t.After(to); t = t.Add(step) {
		for i, l := range series {
			if _, err := app.Append(0, l, t.UnixMilli(), float64(i+1)); err != nil {
				_ = app.Rollback()
				return fmt.Errorf("appending the filter test series: %w", err)
			}
		}
	}
	return app.Commit()
}

// keepFilterSeries appends a sample for each series every step until ctx ends, so instant
// queries at "now" keep finding them; an append error ends it and is reported.
func keepFilterSeries(ctx context.Context, db storage.Appendable, series []labels.Labels, last time.Time, step time.Duration, report func(error)) {
	tick := time.NewTicker(step)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t := now.Truncate(step)
			if !t.After(last) {
				continue
			}
			last = t
			if err := appendFilterSeries(ctx, db, series, t, t, step); err != nil {
				report(err)
				return
			}
		}
	}
}
