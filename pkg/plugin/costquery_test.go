package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/cost"
	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// costFleet answers the cost query's PromQL for one ml.g5.12xlarge (4 GPUs) over two
// hours: a copy of chat-ic holding 2 GPUs, one of quiet-ic holding 1 GPU for the second
// hour, the rest free; chat-ic generated 1.2M tokens, quiet-ic 20.
func costFleet(start time.Time) func(c call) (*fakeResponse, error) {
	end, mid := start.Add(2*time.Hour), start.Add(time.Hour)
	// series holds gpus(t) GPUs at each minute of [start, end] where it is above zero.
	series := func(labels string, gpus func(time.Time) int) string {
		var vals []string
		for t := start; !t.After(end); t = t.Add(time.Minute) {
			if n := gpus(t); n > 0 {
				vals = append(vals, fmt.Sprintf("[%d,\"%d\"]", t.Unix(), n))
			}
		}
		return `{"metric":{` + labels + `},"values":[` + strings.Join(vals, ",") + `]}`
	}
	secondHour := func(n int) func(time.Time) int {
		return func(t time.Time) int {
			if t.Before(mid) {
				return 0
			}
			return n
		}
	}
	host := `"@aws.account":"111122223333","aws.sagemaker.endpoint.name":"chat","@resource.host.id":"i-1","@resource.host.type":"ml.g5.12xlarge"`
	// The holders' query answers the components its matcher keeps (none: all, and the free GPUs).
	holders := func(expr string) string {
		var out []string
		for _, h := range []struct {
			ic, labels string
			gpus       func(time.Time) int
		}{
			{"chat-ic", `,"aws.sagemaker.inference_component.name":"chat-ic","aws.sagemaker.container.id":"c1"`, func(time.Time) int { return 2 }},
			{"quiet-ic", `,"aws.sagemaker.inference_component.name":"quiet-ic","aws.sagemaker.container.id":"c2"`, secondHour(1)},
			{"", "", func(t time.Time) int { return 2 - secondHour(1)(t) }},
		} {
			filtered := strings.Contains(expr, `"aws.sagemaker.inference_component.name"=~`)
			if !filtered || h.ic != "" && strings.Contains(expr, `"aws.sagemaker.inference_component.name"=~"`+h.ic+`"`) {
				out = append(out, series(host+h.labels, h.gpus))
			}
		}
		return strings.Join(out, ",")
	}
	instance := series(host, func(time.Time) int { return 4 })
	return func(c call) (*fakeResponse, error) {
		switch {
		case c.op == "query_range" && strings.Contains(c.expr, "DCGM_FI_DEV_GPU_UTIL") && strings.Contains(c.expr, "group_left"):
			return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[` + holders(c.expr) + `]}}`), nil
		case c.op == "query_range" && strings.Contains(c.expr, "DCGM_FI_DEV_GPU_UTIL") && !strings.Contains(c.expr, "inference_component.name\"=~"):
			return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[` + instance + `]}}`), nil
		case c.op == "query" && strings.Contains(c.expr, "generation_tokens"):
			return okJSON(fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[`+
				`{"metric":{%s,"aws.sagemaker.inference_component.name":"chat-ic","aws.sagemaker.container.id":"c1","model_name":"llama"},"value":[%d,"1200000"]},`+
				`{"metric":{%s,"aws.sagemaker.inference_component.name":"quiet-ic","aws.sagemaker.container.id":"c2","model_name":"qwen"},"value":[%d,"20"]}]}}`, host, end.Unix(), host, end.Unix())), nil
		case c.op == "query" && strings.Contains(c.expr, "prompt_tokens"):
			return okJSON(fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[`+
				`{"metric":{%s,"aws.sagemaker.inference_component.name":"chat-ic","aws.sagemaker.container.id":"c1","model_name":"llama"},"value":[%d,"3000000"]}]}}`, host, end.Unix())), nil
		}
		return nil, fmt.Errorf("unexpected %s %s", c.op, c.expr)
	}
}

type listPrices []pricing.Price

func (l listPrices) Prices(context.Context, string) ([]pricing.Price, error) { return l, nil }
func (l listPrices) ProbePrices(context.Context) error                       { return nil }

// TestCostQueryFrames: the cost views of a small fleet, as golden frames. By hand, at
// $7.09/h: the instance 2 h = $14.18; chat-ic 2/4 × 2 h = 1 instance-h = $7.09, $5.91 per
// 1M output tokens; quiet-ic 1/4 × 1 h = $1.7725 (20 tokens: idle); free GPUs
// 2/4 × 1 h + 1/4 × 1 h = 0.75 instance-h = $5.3175.
func TestCostQueryFrames(t *testing.T) {
	start := time.Date(2026, 11, 2, 4, 0, 0, 0, time.UTC)
	d := costDatasource(t, start)
	for _, view := range models.CostViews {
		t.Run(view, func(t *testing.T) {
			raw, _ := json.Marshal(map[string]any{"queryType": "cost", "view": view, "gpusPerCopy": "2"})
			if view != models.CostViewFit {
				raw, _ = json.Marshal(map[string]any{"queryType": "cost", "view": view})
			}
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
				RefID: "A", QueryType: "cost", JSON: raw, TimeRange: backend.TimeRange{From: start, To: start.Add(2 * time.Hour)},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error != nil {
				t.Fatal(dr.Error)
			}
			goldentest.CheckDataResponse(t, "testdata", "cost-"+view, &dr, *update)
		})
	}
}

// costDatasource answers cost queries from costFleet at $7.09/h for ml.g5.12xlarge.
func costDatasource(t *testing.T, start time.Time) *Datasource {
	t.Helper()
	return costDatasourceOf(t, costFleet(start))
}

// costDatasourceOf is costDatasource with the upstream answering by answer.
func costDatasourceOf(t *testing.T, answer func(c call) (*fakeResponse, error)) *Datasource {
	t.Helper()
	fake := &fakeUpstream{answer: answer}
	list := listPrices{{Region: "us-east-1", InstanceType: "ml.g5.12xlarge", USDPerHour: 7.09, Source: pricing.SourceList, Date: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}}
	d, err := New(context.Background(), testSettings(""), func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) { return fake, nil },
		WithPrices(func(*models.Settings, awsauth.Endpoint, Shared) (awsapi.PriceLister, error) { return list, nil }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Dispose)
	return d
}

// TestCostComponentFilter: filtered to quiet-ic, the spend view shows quiet-ic's share of
// the whole instance (1/4 × 1 h × $7.09 = $1.7725, as unfiltered) and no whole-endpoint
// row, which would be quiet-ic's spend under the endpoint's name.
func TestCostComponentFilter(t *testing.T) {
	start := time.Date(2026, 11, 2, 4, 0, 0, 0, time.UTC)
	d := costDatasource(t, start)
	raw, _ := json.Marshal(map[string]any{"queryType": "cost", "view": "spend", "inferenceComponent": "quiet-ic"})
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "cost", JSON: raw, TimeRange: backend.TimeRange{From: start, To: start.Add(2 * time.Hour)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["A"]
	if dr.Error != nil || len(dr.Frames) != 1 {
		t.Fatalf("%v, %d frames", dr.Error, len(dr.Frames))
	}
	fr := dr.Frames[0]
	ic, spend := fr.Fields[2], fr.Fields[8]
	if fr.Fields[2].Name != "Inference component" || spend.Name != "Spend" {
		t.Fatalf("columns %s, %s", ic.Name, spend.Name)
	}
	n, _ := fr.RowLen()
	if n != 1 || ic.At(0) != "quiet-ic" {
		t.Fatalf("%d rows, first %v; want quiet-ic alone", n, ic.At(0))
	}
	if got, _ := spend.ConcreteAt(0); got == nil || math.Abs(got.(float64)-1.7725) > 1e-9 {
		t.Errorf("quiet-ic spends %v, want $1.7725", got)
	}
}

// TestCostCutOrRefusedAnswers: an answer CloudWatch cut at its series limit (its warning,
// or as many series as the limit) fails the cost query with a message naming the limit and
// the fix, never a table of wrong shares or unknown tokens; CloudWatch refusing a function
// of the cost PromQL (timestamp) reaches the user with its own message.
func TestCostCutOrRefusedAnswers(t *testing.T) {
	start := time.Date(2026, 11, 2, 4, 0, 0, 0, time.UTC)
	fleet := costFleet(start)
	many := func(n int) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(`{"metric":{"aws.sagemaker.container.id":"c%d"},"value":[%d,"1"]}`, i, start.Add(2*time.Hour).Unix()))
		}
		return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(out, ",") + `]}}`
	}
	for _, tc := range []struct {
		name   string
		answer func(c call) (*fakeResponse, error) // nil: the fleet's
		want   []string
	}{
		{"holders cut, with the warning", func(c call) (*fakeResponse, error) {
			if !strings.Contains(c.expr, "group_left") {
				return nil, nil
			}
			return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[]},"warnings":["PromQL query result truncated to 500 series"]}`), nil
		}, []string{"500 series", "narrow it to fewer endpoints", "shorter time range"}},
		{"output tokens at the limit", func(c call) (*fakeResponse, error) {
			if !strings.Contains(c.expr, "generation_tokens") {
				return nil, nil
			}
			return okJSON(many(promclient.MaxQueryLimit)), nil
		}, []string{"500 series", "generation_tokens", "narrow it to fewer endpoints"}},
		{"timestamp refused", func(c call) (*fakeResponse, error) {
			if !strings.Contains(c.expr, "timestamp(") {
				return nil, nil
			}
			return nil, &promclient.APIError{Status: 400, Type: "bad_data", Message: `unknown function "timestamp"`}
		}, []string{`unknown function "timestamp"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := costDatasourceOf(t, func(c call) (*fakeResponse, error) {
				if r, err := tc.answer(c); r != nil || err != nil {
					return r, err
				}
				return fleet(c)
			})
			raw, _ := json.Marshal(map[string]any{"queryType": "cost", "view": "tokens"})
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
				RefID: "A", QueryType: "cost", JSON: raw, TimeRange: backend.TimeRange{From: start, To: start.Add(2 * time.Hour)},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error == nil || len(dr.Frames) != 0 || dr.Status/100 != 4 {
				t.Fatalf("error %v, status %d, %d frames; want the query failed (4xx) and no table", dr.Error, dr.Status, len(dr.Frames))
			}
			for _, w := range tc.want {
				if !strings.Contains(dr.Error.Error(), w) {
					t.Errorf("error %q does not say %q", dr.Error, w)
				}
			}
		})
	}
}

// TestCostQueryFailures: a bad model is refused before anything is sent; CloudWatch
// failing is the query's error, worded by fault.Explain, with no half-priced table.
func TestCostQueryFailures(t *testing.T) {
	start := time.Date(2026, 11, 2, 4, 0, 0, 0, time.UTC)
	fake := &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
		return nil, &promclient.APIError{Status: 503, Type: "unavailable", Message: "service unavailable"}
	}}
	d := newTestDatasource(t, fake)
	run := func(model string) backend.DataResponse {
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "cost", JSON: []byte(model), TimeRange: backend.TimeRange{From: start, To: start.Add(time.Hour)},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Responses["A"]
	}
	if dr := run(`{"view":"cheapest"}`); dr.Error == nil || !strings.Contains(dr.Error.Error(), `field "view" "cheapest" is unknown`) || len(fake.Calls()) != 0 {
		t.Errorf("bad view: %v after %d calls", dr.Error, len(fake.Calls()))
	}
	dr := run(`{"view":"spend"}`)
	if dr.Error == nil || dr.Status/100 != 5 || len(dr.Frames) != 0 || strings.HasPrefix(dr.Error.Error(), "region ") {
		t.Errorf("upstream failing: %v (status %d, %d frames)", dr.Error, dr.Status, len(dr.Frames))
	}
}

// TestCostTokensFrame: the tokens view over two regions is one frame ordered as its panel
// sorts (costliest per output token first, whatever the region), and a DJL endpoint's
// tokens are missing, its Inputs saying they are unknown for want of token counters (DJL
// is an example, not the only engine without), never "0 output tokens".
func TestCostTokensFrame(t *testing.T) {
	book := pricing.NewBook([]pricing.Price{{InstanceType: "ml.g5.12xlarge", USDPerHour: 8}})
	input := func(region string, gpus []cost.GPUs, tokens []cost.Tokens) cost.Input {
		return cost.Input{Region: region, From: time.UnixMilli(0), To: time.UnixMilli(3600e3), Step: time.Hour, GPUs: gpus, Instances: gpus, Tokens: tokens, Prices: book}
	}
	holder := func(endpoint, ic, copy string) cost.GPUs {
		return cost.GPUs{Endpoint: endpoint, Host: endpoint + "-h", InstanceType: "ml.g5.12xlarge", IC: ic, Copy: copy, T: []int64{0}, N: []float64{4}}
	}
	ins := []cost.Input{
		input("us-east-1", []cost.GPUs{holder("cheap", "cheap-ic", "c1"), holder("djl", "", "c2")}, []cost.Tokens{{Endpoint: "cheap", IC: "cheap-ic", Copy: "c1", Output: 8e6}}),
		input("us-west-2", []cost.GPUs{holder("dear", "dear-ic", "c3")}, []cost.Tokens{{Endpoint: "dear", IC: "dear-ic", Copy: "c3", Output: 1e6}}),
	}
	fr := costFrame(&models.CostQuery{View: models.CostViewTokens, Region: "us-east-1,us-west-2"}, ins)
	col := func(name string) int {
		for i, f := range fr.Fields {
			if f.Name == name {
				return i
			}
		}
		t.Fatalf("no column %q", name)
		return -1
	}
	ep, out, in := fr.Fields[col("Endpoint")], fr.Fields[col("Output tokens")], fr.Fields[col("Inputs")]
	var order []string
	for i := range fr.Rows() {
		order = append(order, ep.At(i).(string))
	}
	if want := []string{"dear", "cheap", "djl"}; !slices.Equal(order, want) {
		t.Errorf("rows %v, want %v ($8/M, $1/M, then no cost per token)", order, want)
	}
	djl := slices.Index(order, "djl")
	if djl < 0 || out.At(djl).(*float64) != nil || !strings.Contains(in.At(djl).(string), "output tokens unknown: no token counters (e.g. DJL)") || strings.Contains(in.At(djl).(string), "÷ 0") {
		t.Errorf("djl: output tokens %v, inputs %q; want missing and unknown", out.At(djl), in.At(djl))
	}
}

// TestCostByTagFrame: costFleet with chat tagged Team=search and quiet-ic Team=ads.ranking:
// grouped by Team, quiet-ic's share ($1.7725) is ads.ranking's, the rest of the instance's
// $14.18 search's, with the free GPUs' $5.3175 as its idle spend. Without tag series every
// row is untagged and a notice names the key and the enrichment switch.
func TestCostByTagFrame(t *testing.T) {
	start := time.Date(2026, 11, 2, 4, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)
	for _, tc := range []struct {
		name   string
		tagged bool
		want   map[string][2]float64 // Team → spend, idle spend
	}{
		{"tagged", true, map[string][2]float64{"search": {14.18 - 1.7725, 5.3175}, "ads.ranking": {1.7725, 0}}},
		{"no tag series", false, map[string][2]float64{cost.Untagged: {14.18, 5.3175}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet := costFleet(start)
			tags := func(labels string) string {
				if !tc.tagged {
					return ""
				}
				return fmt.Sprintf(`{"metric":{"@aws.account":"111122223333",%s},"values":[[%d,"1"]]}`, labels, end.Unix())
			}
			d := costDatasourceOf(t, func(c call) (*fakeResponse, error) {
				switch {
				case c.op == "query_range" && strings.Contains(c.expr, "InvocationsForIc"):
					return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[` + tags(`"InferenceComponentName":"quiet-ic","@aws.tag.Team":"ads.ranking"`) + `]}}`), nil
				case c.op == "query_range" && strings.Contains(c.expr, "Invocations"):
					return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[` + tags(`"EndpointName":"chat","@aws.tag.Team":"search"`) + `]}}`), nil
				}
				return fleet(c)
			})
			raw, _ := json.Marshal(map[string]any{"queryType": "cost", "view": "spend", "groupByTag": "Team"})
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
				RefID: "A", QueryType: "cost", JSON: raw, TimeRange: backend.TimeRange{From: start, To: end},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error != nil {
				t.Fatal(dr.Error)
			}
			fr := dr.Frames[0]
			n, _ := fr.RowLen()
			if n != len(tc.want) {
				t.Fatalf("%d rows, want %d", n, len(tc.want))
			}
			for i := range n {
				team := fr.Fields[0].At(i).(string)
				spend, _ := fr.FieldByName("Spend")
				idle, _ := fr.FieldByName("Idle spend")
				got := [2]float64{*spend.At(i).(*float64), *idle.At(i).(*float64)}
				if w, ok := tc.want[team]; !ok || math.Abs(got[0]-w[0]) > 1e-9 || math.Abs(got[1]-w[1]) > 1e-9 {
					t.Errorf("Team %q: spend, idle %v, want %v", team, got, w)
				}
			}
			notice := slices.ContainsFunc(fr.Meta.Notices, func(n data.Notice) bool { return strings.Contains(n.Text, `carries the tag "Team"`) })
			if notice == tc.tagged {
				t.Errorf("notices %v: want the untagged notice %v", fr.Meta.Notices, !tc.tagged)
			}
			if !strings.Contains(fr.Meta.ExecutedQueryString, `group by ("@aws.account", EndpointName, "@aws.tag.Team") (Invocations)`) {
				t.Errorf("executed query %s lacks the endpoint tag query", fr.Meta.ExecutedQueryString)
			}
		})
	}
}
