package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestDiagnosisQueriesRunThroughTheClient(t *testing.T) {
	fake := &fakeUpstream{answer: answerByOp(map[string]string{
		"query":       `{"status":"success","data":{"resultType":"vector","result":[]}}`,
		"query_range": `{"status":"success","data":{"resultType":"matrix","result":[]}}`,
	})}
	d := newTestDatasource(t, fake)
	q := dataQuery("D", `{"queryType":"diagnosis","endpoint":"chat"}`)
	q.QueryType = "diagnosis"
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["D"]
	if dr.Error != nil {
		t.Fatalf("diagnosis failed: %v", dr.Error)
	}
	if len(dr.Frames) != 1 || dr.Frames[0].RefID != "D" {
		t.Fatalf("want one findings frame for D, got %v", dr.Frames)
	}
	calls := fake.Calls()
	if len(calls) == 0 {
		t.Fatal("the rules sent no query through the datasource's client")
	}
	scoped := 0
	for _, c := range calls {
		if c.op != "query" && c.op != "query_range" {
			t.Errorf("diagnosis made a %s call", c.op)
		}
		if strings.Contains(c.expr, `"chat"`) {
			scoped++
		}
	}
	if scoped == 0 {
		t.Error("no query selected the endpoint in the query's scope")
	}
}

func TestDiagnosisErrorsAreRedactedAndDownstream(t *testing.T) {
	secret := testSettings("").DecryptedSecureJSONData["secretKey"]
	fake := &fakeUpstream{answer: func(call) (*fakeResponse, error) {
		return nil, &promclient.APIError{Status: 403, Type: "AccessDeniedException", Message: "denied for " + secret, Cause: promclient.CauseAccessDenied}
	}}
	d := newTestDatasource(t, fake)
	q := dataQuery("D", `{}`)
	q.QueryType = "diagnosis"
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	dr := resp.Responses["D"]
	if dr.Error == nil {
		t.Fatal("want an error when every rule's query is refused")
	}
	if strings.Contains(dr.Error.Error(), secret) {
		t.Errorf("error leaks the secret: %v", dr.Error)
	}
	if dr.ErrorSource != backend.ErrorSourceDownstream || dr.Status != 403 {
		t.Errorf("status %d source %q, want CloudWatch's 403, downstream (as on a panel)", dr.Status, dr.ErrorSource)
	}
	if !strings.Contains(dr.Error.Error(), "Missing permission") {
		t.Errorf("the 403 lacks the hint panels give: %v", dr.Error)
	}
}

// TestDiagnosisConsoleLinks: each finding links to its IC's (else its endpoint's) console page
// and Logs Insights view in the data source's region; a failed rule's row links nowhere.
func TestDiagnosisConsoleLinks(t *testing.T) {
	f := diagnosis.Frame(diagnosis.Report{
		Findings: []diagnosis.Finding{
			{Cause: "KV cache saturation", PanelLink: "/d/perf?var-endpoint=chat&var-inference_component=chat-llama&viewPanel=7"},
			{Cause: "5XX spike", PanelLink: "/d/perf?var-endpoint=embed&viewPanel=9"},
		},
		Failures: []diagnosis.RuleFailure{{Rule: "ice", Error: "refused"}},
	})
	addConsoleLinks(f, "cn-north-1")
	if got := frameColumn(t, f, "console_url"); !slices.Equal(got, []string{
		"https://cn-north-1.console.amazonaws.cn/sagemaker/home?region=cn-north-1#/inference-components/chat-llama",
		"https://cn-north-1.console.amazonaws.cn/sagemaker/home?region=cn-north-1#/endpoints/embed",
		"",
	}) {
		t.Errorf("console_url %q", got)
	}
	logs := frameColumn(t, f, "logs_url")
	if !strings.Contains(logs[0], "*2faws*2fsagemaker*2fInferenceComponents*2fchat-llama") || !strings.Contains(logs[1], "*2faws*2fsagemaker*2fEndpoints*2fembed") || logs[2] != "" {
		t.Errorf("logs_url %q", logs)
	}
	scope, _ := f.FieldByName("scope")
	if scope.Config == nil || len(scope.Config.Links) != 2 || scope.Config.Links[0].URL != "${__data.fields.console_url}" {
		t.Errorf("scope links %+v", scope.Config)
	}
}

// TestDiagnosisFailedRuleCarriesTheFix: one rule refused by CloudWatch becomes a notice with
// the same fix a panel's 403 gets, and the other rules still answer.
func TestDiagnosisFailedRuleCarriesTheFix(t *testing.T) {
	fake := &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
		if strings.Contains(c.expr, semconv.VLLMKVCacheUsage) {
			return nil, &promclient.APIError{Status: 403, Type: "AccessDeniedException", Message: "denied", Cause: promclient.CauseAccessDenied}
		}
		if c.op == "query" {
			return okJSON(`{"status":"success","data":{"resultType":"vector","result":[]}}`), nil
		}
		return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[]}}`), nil
	}}
	d := newTestDatasource(t, fake)
	q := dataQuery("D", `{}`)
	q.QueryType = "diagnosis"
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	dr := resp.Responses["D"]
	if dr.Error != nil || len(dr.Frames) != 1 {
		t.Fatalf("one refused rule must not fail the query: %v", dr.Error)
	}
	for _, n := range dr.Frames[0].Meta.Notices {
		if strings.HasPrefix(n.Text, "rule kv-cache-saturation could not be evaluated") {
			if !strings.Contains(n.Text, "Missing permission") {
				t.Fatalf("notice %q lacks the fix a panel's 403 gets", n.Text)
			}
			return
		}
	}
	t.Fatalf("no notice for the refused rule: %v", dr.Frames[0].Meta.Notices)
}
