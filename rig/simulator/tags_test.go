package simulator

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// taggedFleet is generated fleet seed with WithTags' tags and the given tag families.
func taggedFleet(t *testing.T, seed uint64, families []string) *fleet.Fleet {
	t.Helper()
	base, err := fleet.Generate(rand.New(rand.NewPCG(seed, 11)), 6)
	if err != nil {
		t.Fatal(err)
	}
	base.TagFamilies = families
	f, err := fleet.WithTags(base, rand.New(rand.NewPCG(seed, 35)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// familyOf is the fleet tag family of a catalog family; "" for series that never carry tags.
var familyOf = map[sc.Family]string{
	sc.FamilyVended: fleet.TagsVended, sc.FamilyVLLM: fleet.TagsEngine, sc.FamilySGLang: fleet.TagsEngine,
	sc.FamilyDJL: fleet.TagsEngine, sc.FamilyDCGM: fleet.TagsDCGM, sc.FamilyNode: fleet.TagsNode,
}

// wantTags is what the fleet file says a series carries: the tags of the resource it is
// about (vended: its resource ARN, an endpoint or an IC; others: its endpoint) when its
// family is tagged and enrichment is on.
func wantTags(f *fleet.Fleet, l labels.Labels, enriched bool) map[string]string {
	m, ok := sc.Lookup(l.Get(labels.MetricName))
	fam := familyOf[m.Family]
	if !ok || !enriched || fam == "" || !f.Tagged(fam) {
		return map[string]string{}
	}
	arn := l.Get(sc.LabelResourceID)
	for _, e := range f.Endpoints {
		if fam != fleet.TagsVended && l.Get(sc.LabelEndpoint) == e.Name || strings.HasSuffix(arn, ":endpoint/"+strings.ToLower(e.Name)) {
			return e.Tags
		}
		for _, ic := range e.InferenceComponents {
			if strings.HasSuffix(arn, ":inference-component/"+strings.ToLower(ic.Name)) {
				return ic.Tags
			}
		}
	}
	return map[string]string{}
}

func gotTags(l labels.Labels) map[string]string {
	out := map[string]string{}
	l.Range(func(x labels.Label) {
		if k, ok := strings.CutPrefix(x.Name, sc.LabelTagPrefix); ok {
			out[k] = x.Value
		}
	})
	return out
}

// Every series carries exactly the "@aws.tag.<Key>" labels the fleet file gives its
// resource: on the vended metrics by default, on the families tag_families names, and on
// none while enrichment is off.
func TestTagLabelsFollowTheFleetFile(t *testing.T) {
	all := []string{fleet.TagsVended, fleet.TagsEngine, fleet.TagsDCGM, fleet.TagsNode}
	for _, c := range []struct {
		scenario string
		families []string
	}{{"healthy", nil}, {"healthy", all}, {"enrichment-off", all}} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/%v/%d", c.scenario, c.families, seed), func(t *testing.T) {
				f := taggedFleet(t, seed, c.families)
				db := backfillFleet(t, f, c.scenario, 1)
				tagged, untagged := 0, 0
				forEachSeries(t, db, func(l labels.Labels) {
					want, got := wantTags(f, l, c.scenario != "enrichment-off"), gotTags(l)
					if !maps.Equal(want, got) {
						t.Fatalf("%s: tags %v, the fleet file says %v", l, got, want)
					}
					if len(got) > 0 {
						tagged++
					} else {
						untagged++
					}
				})
				if c.scenario == "healthy" && tagged == 0 || c.families == nil && untagged == 0 {
					t.Errorf("%d tagged and %d untagged series: the case exercises nothing", tagged, untagged)
				}
			})
		}
	}
}

// A tag matcher with hostile names and values selects the tagged endpoints' series, through
// PromQL's quoting of label names and values.
func TestTagMatcherSelectsTheTaggedEndpoints(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		f := taggedFleet(t, seed, nil)
		db := backfillFleet(t, f, "healthy", 1)
		for _, e := range f.Endpoints {
			for k, v := range e.Tags {
				want := map[string]bool{}
				for _, o := range f.Endpoints {
					if val, ok := o.Tags[k]; ok && val == v {
						want[o.Name] = true
					}
				}
				expr := fmt.Sprintf(`count by (EndpointName) ({%q, %q=%q})`, sc.Invocations, sc.LabelTagPrefix+k, v)
				got := query(t, db, expr, sc.DimEndpointName)
				if len(got) != len(want) {
					t.Errorf("%s: endpoints %v, the fleet file tags %v", expr, got, want)
				}
				for name := range got {
					if !want[name] {
						t.Errorf("%s: endpoint %s is not tagged %s=%s", expr, name, k, v)
					}
				}
			}
		}
	}
}

func forEachSeries(t *testing.T, db *tsdb.DB, fn func(labels.Labels)) {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	for ss.Next() {
		fn(ss.At().Labels())
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
}
