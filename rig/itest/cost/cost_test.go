// Package cost_test checks the cost query end to end: the plugin (production clients, real
// promclient, SigV4, the Price List client) against the emulator serving generated fleets
// and its GetProducts fixture, against a hand computation from the fleet description.
package cost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/sagemaker-datasource/pkg/cost"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/cwcheck"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// fixturePrices are the emulator's list prices (rig/awsemu/prices.json), read here as data
// rather than through any plugin code: region → type → USD per hour.
func fixturePrices(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "awsemu", "prices.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Hosting map[string]map[string]float64 `json:"hosting"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Hosting
}

func datasource(t *testing.T, st *stack.Stack, extra map[string]any) *plugin.Datasource {
	t.Helper()
	jd, secure := st.DataSourceSettings()
	jsonData := map[string]any{}
	for k, v := range jd {
		jsonData[k] = v
	}
	for k, v := range extra {
		jsonData[k] = v
	}
	return dstest.New(t, "cost", jsonData, secure)
}

// costQuery runs a cost query over [end-span, end].
func costQuery(t *testing.T, d *plugin.Datasource, end time.Time, span time.Duration, model map[string]any) backend.DataResponse {
	t.Helper()
	model["queryType"] = "cost"
	raw, err := json.Marshal(model)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "cost", JSON: raw, TimeRange: backend.TimeRange{From: end.Add(-span), To: end},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Responses["A"]
}

// rows are a table frame's rows by column name; missing numbers are NaN.
func rows(t *testing.T, r backend.DataResponse) []map[string]any {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("cost query failed: %v", r.Error)
	}
	if len(r.Frames) != 1 {
		t.Fatalf("%d frames, want one table", len(r.Frames))
	}
	fr := r.Frames[0]
	n, _ := fr.RowLen()
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{}
		for _, f := range fr.Fields {
			switch v := f.At(i).(type) {
			case *float64:
				if v == nil {
					out[i][f.Name] = math.NaN()
				} else {
					out[i][f.Name] = *v
				}
			default:
				out[i][f.Name] = v
			}
		}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// TestSpendEqualsAHandComputation: on generated fleets (fixed seeds: types, counts,
// autoscaled copies), each endpoint's spend over two hours is its instances × their list
// price × 2 h, the ICs' shares and the idle part add up to it, and each number's inputs
// are stated; the account filter keeps the fleet's account and drops another.
func TestSpendEqualsAHandComputation(t *testing.T) {
	prices := fixturePrices(t)
	const span = 2 * time.Hour
	for seed := uint64(1); seed <= 3; seed++ {
		f, err := fleet.Generate(rand.New(rand.NewPCG(seed, 28)), 10)
		if err != nil {
			t.Fatal(err)
		}
		st := dstest.Stack(t, stack.Options{Fleet: f, Seed: int64(seed)})
		d := datasource(t, st, nil)
		want := map[string]float64{}
		for i := range f.Endpoints {
			e := &f.Endpoints[i]
			for _, g := range e.Instances {
				want[e.Name] += float64(g.Count) * prices[f.Region][g.Type] * span.Hours()
			}
		}
		whole, shares, idle := map[string]float64{}, map[string]float64{}, map[string]float64{}
		for _, r := range rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "spend"})) {
			ep, spend := r["Endpoint"].(string), r["Spend"].(float64)
			if r["Inference component"] == "(whole endpoint)" {
				whole[ep] += spend
				idle[ep] += r["Idle spend"].(float64)
				in := r["Inputs"].(string)
				if !strings.Contains(in, fmt.Sprintf("$%s/h (AWS Price List, 2026-11-01)", fmt.Sprint(r["Price per hour"]))) || !near(spend, r["Instance-hours"].(float64)*r["Price per hour"].(float64)) {
					t.Errorf("seed %d %s: inputs %q do not state spend %g", seed, ep, in, spend)
				}
			} else {
				shares[ep] += spend
			}
		}
		for ep, w := range want {
			if !near(whole[ep], w) {
				t.Errorf("seed %d endpoint %s (%s): spend %g, by hand %g", seed, ep, f.Region, whole[ep], w)
			}
			if !near(shares[ep]+idle[ep], w) {
				t.Errorf("seed %d endpoint %s: copies %g + idle %g ≠ %g", seed, ep, shares[ep], idle[ep], w)
			}
		}
		t.Logf("seed %d (%s): spend by endpoint %v, by hand %v", seed, f.Region, whole, want)
		if len(whole) != len(want) {
			t.Errorf("seed %d: endpoints %v, want %v", seed, whole, want)
		}
		if got := rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "spend", "account": f.Account})); len(got) == 0 {
			t.Errorf("seed %d: the fleet's own account filters everything out", seed)
		}
		if got := rows(t, costQuery(t, d, st.End, span, map[string]any{"view": "spend", "account": "999999999999"})); len(got) != 0 {
			t.Errorf("seed %d: another account's filter keeps %d rows", seed, len(got))
		}
	}
}

// TestTokensAndGaps: per model, USD per million output tokens is its copies' spend over
// its tokens; a type the price table and the list lack is a visible gap, never zero; the
// price table overrides the list price.
func TestTokensAndGaps(t *testing.T) {
	st := dstest.Stack(t, stack.Options{Scenario: "healthy"})
	d := datasource(t, st, map[string]any{"priceTable": []map[string]any{{"instanceType": "ml.g5.12xlarge", "usdPerHour": 5}}})
	models := rows(t, costQuery(t, d, st.End, time.Hour, map[string]any{"view": "tokens"}))
	if len(models) == 0 {
		t.Fatal("no model rows")
	}
	served := 0
	for _, r := range models {
		spend, out := r["Spend"].(float64), r["Output tokens"].(float64)
		if out > 0 {
			served++
		}
		if out > 0 && !near(r["USD per 1M output tokens"].(float64), spend/out*1e6) {
			t.Errorf("%v: $/M output %v ≠ %g / %g × 1e6", r["Inference component"], r["USD per 1M output tokens"], spend, out)
		}
		if out > 0 && !(spend > 0) {
			t.Errorf("%v: spend %g for %g tokens", r["Inference component"], spend, out)
		}
	}
	if served == 0 {
		t.Error("no model served a token")
	}
	prices := rows(t, costQuery(t, d, st.End, time.Hour, map[string]any{"view": "prices"}))
	seen := map[any]bool{}
	for _, r := range prices {
		seen[r["Instance type"]] = true
		switch r["Instance type"] {
		case "ml.g5.12xlarge":
			if r["Price per hour"] != 5.0 || r["Price source"] != "price table" {
				t.Errorf("the price table does not override the list: %v", r)
			}
		case "ml.g5.2xlarge":
			if r["Price per hour"] != 1.515 {
				t.Errorf("list price %v", r)
			}
		}
	}
	if !seen["ml.g5.12xlarge"] || !seen["ml.g5.2xlarge"] {
		t.Errorf("prices of %v, want the default fleet's types", seen)
	}
	// sa-east-1's list has no ml.p5.48xlarge (prices.json): a fleet there shows the gap.
	f := fleet.Default()
	for i := range f.Endpoints {
		for j := range f.Endpoints[i].Instances {
			f.Endpoints[i].Instances[j].Type = "ml.p5.48xlarge"
		}
	}
	sa := dstest.Stack(t, stack.Options{Fleet: f.InRegion("sa-east-1", "-sa")})
	resp := costQuery(t, datasource(t, sa, nil), sa.End, time.Hour, map[string]any{"view": "spend"})
	for _, r := range rows(t, resp) {
		if !math.IsNaN(r["Spend"].(float64)) || !strings.Contains(r["Inputs"].(string), "no price for ml.p5.48xlarge in sa-east-1") {
			t.Errorf("unpriced row: %v", r)
		}
	}
	if n := resp.Frames[0].Meta.Notices; len(n) == 0 || !strings.Contains(n[0].Text, "no price for ml.p5.48xlarge in sa-east-1") {
		t.Errorf("notices %v, want the gap", n)
	}
}

// TestTwoRegionsArePricedPerRegion: one query over two regions prices each region's
// instances at its own list price (us-west-2's fixture is 4 % above us-east-1's).
func TestTwoRegionsArePricedPerRegion(t *testing.T) {
	fs := fleet.TwoRegions()
	m := dstest.Regions(t, stack.MultiOptions{
		Options: stack.Options{Seed: 11, History: 2 * time.Hour, End: stack.PinnedEnd},
		Regions: []stack.Region{{Fleet: fs[0]}, {Fleet: fs[1]}},
	})
	jsonData, secure := m.DataSourceSettings()
	d := dstest.New(t, "cost-regions", jsonData, secure)
	prices := fixturePrices(t)
	got := map[string]int{}
	for _, r := range rows(t, costQuery(t, d, m.End, time.Hour, map[string]any{"view": "prices", "region": "us-east-1,us-west-2"})) {
		region, typ := r["Region"].(string), r["Instance type"].(string)
		if r["Price per hour"] != prices[region][typ] {
			t.Errorf("%s %s: %v, want %v", region, typ, r["Price per hour"], prices[region][typ])
		}
		got[region]++
	}
	if got["us-east-1"] == 0 || got["us-west-2"] == 0 {
		t.Errorf("price rows per region %v, want both regions", got)
	}
	for _, r := range rows(t, costQuery(t, d, m.End, time.Hour, map[string]any{"view": "spend", "region": "us-west-2"})) {
		if _, ok := r["Region"]; !ok || r["Region"] != "us-west-2" {
			t.Errorf("a us-west-2 query gave a row of %v", r["Region"])
		}
	}
}

// TestIdleCapacityFinding: diagnosis reports each endpoint's idle spend per day at the same
// dollars the cost query's idle view gives, with the severity DefaultConfig's thresholds
// give it, and below every incident.
func TestIdleCapacityFinding(t *testing.T) {
	cfg := diagnosis.DefaultConfig()
	seen := 0
	for _, scenario := range []string{"healthy", "kv-saturation"} {
		st := dstest.Stack(t, stack.Options{Scenario: scenario})
		d := datasource(t, st, nil)
		perDay := map[string]float64{}
		for _, r := range rows(t, costQuery(t, d, st.End, time.Hour, map[string]any{"view": "idle"})) {
			perDay[r["Endpoint"].(string)] += r["Idle spend per day"].(float64)
		}
		raw, _ := json.Marshal(map[string]any{"queryType": "diagnosis"})
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "diagnosis", JSON: raw, TimeRange: backend.TimeRange{From: st.End.Add(-time.Hour), To: st.End},
		}}})
		if err != nil || resp.Responses["A"].Error != nil {
			t.Fatalf("%s: diagnosis: %v %v", scenario, err, resp.Responses["A"].Error)
		}
		findings := rows(t, resp.Responses["A"])
		standing := false
		for _, r := range findings {
			cause, sev, summary := r["cause"].(string), r["severity"].(string), r["summary"].(string)
			if sev == "unknown" {
				continue // failed rules come last
			}
			if cause != "idle capacity" {
				if standing {
					t.Errorf("%s: incident %q ranks below idle capacity", scenario, cause)
				}
				continue
			}
			standing = true
			seen++
			t.Logf("%s: %s %s", scenario, sev, summary)
			ep := strings.TrimPrefix(r["scope"].(string), "endpoint ")
			want := perDay[ep]
			wantSev := "info"
			if want >= cfg.IdleWarnUSDPerDay {
				wantSev = "warning"
			}
			if !strings.HasPrefix(summary, fmt.Sprintf("$%.2f a day of %s", want, ep)) || sev != wantSev || want < cfg.IdleInfoUSDPerDay {
				t.Errorf("%s: %s %q; the cost query's idle spend is $%.2f a day", scenario, sev, summary, want)
			}
		}
		for ep, v := range perDay {
			if v >= cfg.IdleInfoUSDPerDay && !slices.ContainsFunc(findings, func(r map[string]any) bool { return r["scope"] == "endpoint "+ep }) {
				t.Errorf("%s: %s idles $%.2f a day and has no finding", scenario, ep, v)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no idle capacity finding in either scenario: the test checks nothing")
	}
}

// TestICEFindingPricesItsFallback: the ICE finding for ml.g5.12xlarge names what falling
// back costs per instance hour, at the region's list prices, and a fallback without a
// price as the gap it is.
func TestICEFindingPricesItsFallback(t *testing.T) {
	st := dstest.Stack(t, stack.Options{Scenario: "ice-exhaustion"})
	d := datasource(t, st, nil)
	raw, _ := json.Marshal(map[string]any{"queryType": "diagnosis"})
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "diagnosis", JSON: raw, TimeRange: backend.TimeRange{From: st.End.Add(-2 * time.Hour), To: st.End},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	prices := fixturePrices(t)["us-east-1"]
	from, to := prices["ml.g5.12xlarge"], prices["ml.g6e.12xlarge"]
	wantDiff := fmt.Sprintf("%+.3f USD/h per instance (%+.0f %%)", to-from, 100*(to-from)/from)
	found := false
	for _, r := range rows(t, resp.Responses["A"]) {
		if !strings.HasPrefix(r["cause"].(string), "ICE") || !strings.Contains(r["scope"].(string), "ml.g5.12xlarge") {
			continue
		}
		found = true
		ev, next := r["evidence"].(string), r["next step"].(string)
		if !strings.Contains(ev, "fallback ml.g6e.12xlarge") || !strings.Contains(ev, wantDiff) || !strings.Contains(next, fmt.Sprintf("Falling back to ml.g6e.12xlarge costs %+.3f USD an hour", to-from)) {
			t.Errorf("ICE finding without its fallback's price (want %s):\nevidence: %s\nnext: %s", wantDiff, ev, next)
		}
		if !strings.Contains(ev, "no price for ml.g6.12xlarge in us-east-1") {
			t.Errorf("the unpriced fallback ml.g6.12xlarge is not shown as a gap: %s", ev)
		}
	}
	if !found {
		t.Fatal("no ICE finding for ml.g5.12xlarge")
	}
}

// TestSaveAndTestReadsAListPrice: with every permission, Save & test says it can read the
// list prices only after reading one: its probe asks the emulator's Price List for a hosting
// instance of the data source's region and parses the price.
func TestSaveAndTestReadsAListPrice(t *testing.T) {
	st := dstest.Stack(t, stack.Options{Scenario: "healthy"})
	res, err := datasource(t, st, nil).CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil || res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "AWS list prices") || strings.Contains(res.Message, "Warning") {
		t.Fatalf("Save & test: %v %v %q", err, res.Status, res.Message)
	}
}

// TestWithoutGetProducts: denied pricing:GetProducts, Save & test still passes and warns
// naming the action; the cost query answers, its list-priced rows gaps that name the action,
// and the price table still prices what it lists.
func TestWithoutGetProducts(t *testing.T) {
	st := dstest.Stack(t, stack.Options{Scenario: "healthy", Deny: []string{"pricing:GetProducts"}})
	d := datasource(t, st, map[string]any{"priceTable": []map[string]any{{"instanceType": "ml.g5.2xlarge", "usdPerHour": 1.1}}})
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil || res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "not allowed pricing:GetProducts") {
		t.Fatalf("Save & test: %v %v %q", err, res.Status, res.Message)
	}
	priced, gaps := 0, 0
	for _, r := range rows(t, costQuery(t, d, st.End, time.Hour, map[string]any{"view": "spend"})) {
		switch {
		case r["Instance type"] == "ml.g5.2xlarge":
			if math.IsNaN(r["Spend"].(float64)) {
				t.Errorf("the price table's type has no spend: %v", r)
			}
			priced++
		case math.IsNaN(r["Spend"].(float64)) && strings.Contains(r["Inputs"].(string), "pricing:GetProducts"):
			gaps++
		default:
			t.Errorf("row without a list price neither a gap naming the action: %v", r)
		}
	}
	if priced == 0 || gaps == 0 {
		t.Errorf("%d priced rows and %d gaps, want both", priced, gaps)
	}
}

// TestCostPromQLObeysCloudWatchRules: the cost query's four expressions, with and without
// filters, parse and break none of CloudWatch's PromQL rules.
func TestCostPromQLObeysCloudWatchRules(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, m := range []struct{ instance, holder []string }{{}, {[]string{px.Re(sc.LabelEndpoint, "a|b"), px.Re(sc.LabelAccount, "111122223333")}, []string{px.Re(sc.LabelInferenceComp, "c|d")}}} {
		ex := cost.ExprsFor("2h", time.Minute, m.instance, m.holder)
		for _, expr := range []string{ex.GPUs, ex.Instances, ex.Output, ex.Input} {
			ast, err := p.ParseExpr(expr)
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, expr)
			}
			for _, problem := range cwcheck.Problems(ast) {
				t.Errorf("%s\n%s", problem, expr)
			}
		}
	}
}
