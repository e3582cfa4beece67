package cost

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// hostileTagValues hold what tag values may: dots, spaces, UTF-8, quotes, backslashes.
var hostileTagValues = []string{"search", "ads.ranking", "Big Team", `o"brien`, "équipe-ü", `a\b`}

// tagFleet tags a generated fleet's endpoints and ICs at random (some untagged) and returns
// the tags by resource and the spend, idle spend (free GPUs) and output tokens per tag value worked out from the timeline by hand.
func tagFleet(seed uint64, fleet []genInstance, prices map[string]float64) (tags map[Resource]string, spend, idle, output map[string]float64) {
	r := rand.New(rand.NewPCG(seed, 35))
	tags = map[Resource]string{}
	pick := func(res Resource) {
		if _, done := tags[res]; !done {
			tags[res] = ""
			if r.IntN(3) > 0 {
				tags[res] = hostileTagValues[r.IntN(len(hostileTagValues))]
			}
		}
	}
	tagOf := func(ep, ic string) string {
		if v := tags[Resource{Account: "111122223333", IC: ic}]; ic != "" && v != "" {
			return v
		}
		if v := tags[Resource{Account: "111122223333", Endpoint: ep}]; v != "" {
			return v
		}
		return Untagged
	}
	spend, idle, output = map[string]float64{}, map[string]float64{}, map[string]float64{}
	h := genStep.Hours()
	for _, in := range fleet {
		pick(Resource{Account: "111122223333", Endpoint: in.endpoint})
		p := prices[in.typ.name]
		whole := float64(in.until-in.from) * h * p
		for _, c := range in.copies {
			pick(Resource{Account: "111122223333", IC: c.ic})
			share := float64(c.until-c.from) * h * float64(c.gpus) / float64(in.typ.gpus) * p
			spend[tagOf(in.endpoint, c.ic)] += share
			output[tagOf(in.endpoint, c.ic)] += c.output
			whole -= share
		}
		spend[tagOf(in.endpoint, "")] += whole
		idle[tagOf(in.endpoint, "")] += whole
	}
	return tags, spend, idle, output
}

// TestByTagSumsToTheTotals: on generated tagged fleets, each view's rows grouped by tag equal
// the timeline's spend per tag worked out by hand, and their sum equals the ungrouped view's
// total (spend, idle spend, tokens' spend and tokens).
func TestByTagSumsToTheTotals(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		fleet, prices := generate(seed)
		gs, ts := series(fleet)
		tags, wantSpend, wantIdle, wantOut := tagFleet(seed, fleet, prices)
		in := Input{Region: region, From: t0, To: t0.Add(genSteps * genStep), Step: genStep, GPUs: gs, Instances: instances(fleet), Tokens: ts, Prices: book(prices, ""), Tags: tags}
		lines := Lines(in)
		sum := func(rows []TagSpend, f func(TagSpend) float64) (total float64) {
			seen := map[string]bool{}
			for _, r := range rows {
				if seen[r.Value] {
					t.Errorf("seed %d: tag value %q has two rows", seed, r.Value)
				}
				seen[r.Value] = true
				total += f(r)
			}
			return total
		}

		byTag := SpendByTag(in, lines)
		for _, r := range byTag {
			if !near(r.Spend, wantSpend[r.Value]) || !near(r.IdleSpend, wantIdle[r.Value]) {
				t.Errorf("seed %d tag %q: spend %g idle %g, by hand %g idle %g", seed, r.Value, r.Spend, r.IdleSpend, wantSpend[r.Value], wantIdle[r.Value])
			}
		}
		var total, totalIdle float64
		for _, s := range ByEndpoint(lines) {
			total += s.Spend
			totalIdle += s.IdleSpend
		}
		if got := sum(byTag, func(r TagSpend) float64 { return r.Spend }); !near(got, total) {
			t.Errorf("seed %d spend view: by tag %g, ungrouped %g", seed, got, total)
		}
		if got := sum(byTag, func(r TagSpend) float64 { return r.IdleSpend }); !near(got, totalIdle) {
			t.Errorf("seed %d spend view idle: by tag %g, ungrouped %g", seed, got, totalIdle)
		}

		idle := Idle(in, lines)
		var idleTotal, perDay float64
		for _, i := range idle {
			idleTotal += i.Spend
			perDay += i.PerDay
		}
		idleByTag := IdleByTag(in, idle)
		if got := sum(idleByTag, func(r TagSpend) float64 { return r.IdleSpend }); !near(got, idleTotal) || !near(sum(idleByTag, func(r TagSpend) float64 { return r.IdlePerDay }), perDay) {
			t.Errorf("seed %d idle view: by tag %g, ungrouped %g", seed, got, idleTotal)
		}

		models := PerModel(in, lines)
		var modelSpend, out float64
		for _, m := range models {
			modelSpend += m.Spend
			out += m.Output
		}
		tokens := TokensByTag(in, models)
		if got := sum(tokens, func(r TagSpend) float64 { return r.Spend }); !near(got, modelSpend) {
			t.Errorf("seed %d tokens view spend: by tag %g, ungrouped %g", seed, got, modelSpend)
		}
		if got := sum(tokens, func(r TagSpend) float64 { return r.Output }); !near(got, out) {
			t.Errorf("seed %d tokens view output: by tag %g, ungrouped %g", seed, got, out)
		}
		for _, r := range tokens {
			want := math.NaN()
			if wantOut[r.Value] > 0 {
				want = (wantSpend[r.Value] - wantIdle[r.Value]) / wantOut[r.Value] * 1e6
			}
			if !(near(r.PerMillionOutput, want) || math.IsNaN(want) && math.IsNaN(r.PerMillionOutput)) {
				t.Errorf("seed %d tag %q: $/M output %g, by hand %g", seed, r.Value, r.PerMillionOutput, want)
			}
		}
		for i, r := range byTag {
			if r.Value == Untagged && i != len(byTag)-1 {
				t.Errorf("seed %d: untagged row at %d of %d, want it last", seed, i, len(byTag))
			}
		}
	}
}

// TestReadTags: the tag queries' series (values with dots, spaces, UTF-8 and quotes) become
// each resource's value; a resource retagged within the range keeps its newest value, and
// one without the label is untagged.
func TestReadTags(t *testing.T) {
	const key = `Cost Center.ü "x"`
	label := sc.LabelTagPrefix + key
	ex := Exprs{GPUs: "gpus", Instances: "instances", Output: "out", Input: "in"}.WithTags(key, []string{"e1", "e.2"}, nil)
	for _, want := range []string{`"` + strings.ReplaceAll(label, `"`, `\"`) + `"`, `EndpointName=~"e1|e\\.2"`} {
		if !strings.Contains(ex.EndpointTags, want) {
			t.Errorf("endpoint tag query %s lacks %s", ex.EndpointTags, want)
		}
	}
	at := func(ls map[string]string, ts ...int64) Series {
		return Series{Labels: func(l string) string { return ls[l] }, T: ts, V: make([]float64, len(ts))}
	}
	answers := map[string][]Series{
		ex.EndpointTags: {
			at(map[string]string{sc.LabelAccount: "1", sc.DimEndpointName: "e1", label: "old team"}, 1, 2),
			at(map[string]string{sc.LabelAccount: "1", sc.DimEndpointName: "e1", label: `new.team "ü"`}, 3, 4),
			at(map[string]string{sc.LabelAccount: "1", sc.DimEndpointName: "e.2"}, 1),
		},
		ex.ICTags: {at(map[string]string{sc.LabelAccount: "1", sc.DimInferenceComponentName: "ic", label: "ic team"}, 1)},
	}
	query := func(_ context.Context, expr string) (Answer, error) { return Answer{Series: answers[expr]}, nil }
	in, err := Read(context.Background(), Input{From: time.UnixMilli(0), To: time.UnixMilli(5)}, ex, 500, query, query)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ endpoint, ic, want string }{
		{"e1", "", `new.team "ü"`}, {"e.2", "", Untagged}, {"e1", "ic", "ic team"}, {"e.2", "other", Untagged}, {"e1", "other", `new.team "ü"`},
	} {
		if got := in.TagOf("1", tc.endpoint, tc.ic); got != tc.want {
			t.Errorf("%s/%s: %q, want %q", tc.endpoint, tc.ic, got, tc.want)
		}
	}
	if fmt.Sprint(len(in.Tags)) != "3" {
		t.Errorf("tags %v, want 3 resources", in.Tags)
	}
}
