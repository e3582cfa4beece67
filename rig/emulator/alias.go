package emulator

import (
	"context"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// CloudWatch stores OTLP datapoint attributes bare but also answers to their
// "@datapoint." spelling, and "@datapoint.@name" is the metric name (CloudWatch notes
// §11). Storage holds only the bare form; these wrappers rewrite names on the way in.
const (
	datapointPrefix = "@datapoint."
	datapointName   = "@datapoint.@name"
)

// canonicalLabel maps a label name as a query may spell it to the name in storage.
func canonicalLabel(name string) string {
	if name == datapointName {
		return labels.MetricName
	}
	// "@datapoint.@x" names other OTLP datapoint fields, which storage does not keep.
	if rest, ok := strings.CutPrefix(name, datapointPrefix); ok && rest != "" && !strings.HasPrefix(rest, "@") {
		return rest
	}
	return name
}

// canonicalMatchers returns ms with aliased names rewritten; ms itself when nothing
// changes. Copies keep the compiled regular expressions.
func canonicalMatchers(ms []*labels.Matcher) []*labels.Matcher {
	var out []*labels.Matcher
	for i, m := range ms {
		name := canonicalLabel(m.Name)
		if name == m.Name {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]*labels.Matcher, 0, len(ms)), ms[:i]...)
		}
		c := *m
		c.Name = name
		out = append(out, &c)
	}
	if out == nil {
		return ms
	}
	return out
}

type aliasQueryable struct{ storage.Queryable }

func (q aliasQueryable) Querier(mint, maxt int64) (storage.Querier, error) {
	inner, err := q.Queryable.Querier(mint, maxt)
	if err != nil {
		return nil, err
	}
	return aliasQuerier{inner}, nil
}

type aliasQuerier struct{ storage.Querier }

func (q aliasQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	return q.Querier.Select(ctx, sortSeries, hints, canonicalMatchers(ms)...)
}

func (q aliasQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return q.Querier.LabelValues(ctx, canonicalLabel(name), hints, canonicalMatchers(ms)...)
}

func (q aliasQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return q.Querier.LabelNames(ctx, hints, canonicalMatchers(ms)...)
}
