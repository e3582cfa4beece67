package simulator

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// TestSeriesLabelsListedByFamily: every simulated series is a catalog metric whose labels its
// family lists in semconv.Families, the lists ad-hoc filters use to pick the selectors a
// matcher goes into. Scaling, ICE and cold-start scenarios add the control-plane events.
func TestSeriesLabelsListedByFamily(t *testing.T) {
	families := map[semconv.Family][]string{}
	for _, f := range semconv.Families {
		families[f.ID] = f.Labels
	}
	for _, scenario := range []string{"healthy", "scaling-not-firing", "ice-exhaustion", "slow-cold-start"} {
		t.Run(scenario, func(t *testing.T) {
			db := backfilled(t, scenario, 2)
			q, err := db.Querier(math.MinInt64, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
			missing := map[string]bool{}
			n := 0
			for ss.Next() {
				n++
				l := ss.At().Labels()
				name := l.Get(labels.MetricName)
				m, ok := semconv.Lookup(name)
				if !ok {
					missing[name+": not in the catalog"] = true
					continue
				}
				l.Range(func(x labels.Label) {
					if x.Name != labels.MetricName && !slices.Contains(families[m.Family], x.Name) {
						missing[string(m.Family)+" lacks "+x.Name+" (on "+name+")"] = true
					}
				})
			}
			if err := ss.Err(); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("no series simulated")
			}
			for k := range missing {
				t.Error(k)
			}
		})
	}
}
