package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
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

// diagnoseIn sends a fleet diagnosis naming regions through QueryData.
func diagnoseIn(d *Datasource, regions string) backend.DataResponse {
	q := dataQuery("D", `{"queryType":"diagnosis","region":"`+regions+`"}`)
	q.QueryType = "diagnosis"
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	return resp.Responses["D"]
}

// twoRegions builds a data source allowing us-east-1 (default) and us-west-2 whose clients
// are the given fake upstreams, one per region, so each region's calls are seen apart.
func twoRegions(t *testing.T, fakes map[string]*fakeUpstream) *Datasource {
	t.Helper()
	s := testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","allowedRegions":["us-east-1","us-west-2"]}`)
	rf := &regionFakes{mk: func(region string) *fakeUpstream { return fakes[region] }}
	d, err := New(context.Background(), s, rf.factory)
	if err != nil || d.setupErr != nil {
		t.Fatalf("settings rejected: %v %v", err, d.setupErr)
	}
	return d
}

// iceRegion answers a region's ICE query with errors for ml.g5.2xlarge on endpoint chat in
// the hit AZs, its AZ query with the AZs in use, and everything else with no data.
func iceRegion(inUse []string, hit ...string) *fakeUpstream {
	vector := func(samples []string) *fakeResponse {
		return okJSON(`{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`)
	}
	return &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
		var out []string
		switch {
		case c.op == "query_range":
			return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[]}}`), nil
		case strings.Contains(c.expr, semconv.ICECount):
			for _, az := range hit {
				out = append(out, fmt.Sprintf(`{"metric":{%q:"chat",%q:"ml.g5.2xlarge",%q:%q},"value":[1764460800,"9"]}`, semconv.LabelEndpoint, semconv.LabelEventInstanceType, semconv.LabelEventAZ, az))
			}
		case strings.HasPrefix(c.expr, `count by ("`+semconv.LabelAZ+`")`):
			for _, az := range inUse {
				out = append(out, fmt.Sprintf(`{"metric":{%q:%q},"value":[1764460800,"4"]}`, semconv.LabelAZ, az))
			}
		}
		return vector(out), nil
	}}
}

// TestDiagnosisAcrossRegions: a diagnosis naming two regions runs the rules through each
// region's client, and ranks first that us-east-1 is out of ml.g5.2xlarge in every AZ while
// us-west-2 has it, in a region column, with the console links of the finding's region.
func TestDiagnosisAcrossRegions(t *testing.T) {
	east := iceRegion([]string{"us-east-1a", "us-east-1b"}, "us-east-1a", "us-east-1b")
	west := iceRegion([]string{"us-west-2a", "us-west-2b"})
	d := twoRegions(t, map[string]*fakeUpstream{"us-east-1": east, "us-west-2": west})
	dr := diagnoseIn(d, "us-east-1, us-west-2")
	if dr.Error != nil || len(dr.Frames) != 1 {
		t.Fatalf("diagnosis failed: %v", dr.Error)
	}
	f := dr.Frames[0]
	cause, region, summary := frameColumn(t, f, "cause"), frameColumn(t, f, "region"), frameColumn(t, f, "summary")
	if cause[0] != "ICE in every AZ while another region has capacity (us-east-1)" || region[0] != "us-east-1" ||
		!strings.Contains(summary[0], "us-west-2 has capacity") {
		t.Fatalf("first row %q / %q / %q, want the cross-region ICE finding of us-east-1", cause[0], region[0], summary[0])
	}
	if !strings.HasPrefix(cause[1], "ICE: instance type exhausted in every AZ") || region[1] != "us-east-1" {
		t.Errorf("second row %q in %q, want us-east-1's own ICE finding", cause[1], region[1])
	}
	if console := frameColumn(t, f, "console_url"); !strings.Contains(console[0], "region=us-east-1#/endpoints/chat") {
		t.Errorf("console link %q, want the endpoint's page in us-east-1", console[0])
	}
	for name, fake := range map[string]*fakeUpstream{"us-east-1": east, "us-west-2": west} {
		if len(fake.Calls()) == 0 {
			t.Errorf("no rule queried %s", name)
		}
	}
}

// TestDiagnosisRegionFailures: a region whose every query is refused is one row naming it,
// worded with the fix, and the other region's findings stay; a region the data source does
// not allow is refused before anything is sent.
func TestDiagnosisRegionFailures(t *testing.T) {
	east := iceRegion([]string{"us-east-1a"}, "us-east-1a")
	west := &fakeUpstream{answer: func(call) (*fakeResponse, error) {
		return nil, &promclient.APIError{Status: 403, Type: "AccessDeniedException", Message: "denied", Cause: promclient.CauseAccessDenied}
	}}
	d := twoRegions(t, map[string]*fakeUpstream{"us-east-1": east, "us-west-2": west})
	dr := diagnoseIn(d, "us-east-1,us-west-2")
	if dr.Error != nil || len(dr.Frames) != 1 {
		t.Fatalf("one region refused must not fail the query: %v", dr.Error)
	}
	cause, region, summary := frameColumn(t, dr.Frames[0], "cause"), frameColumn(t, dr.Frames[0], "region"), frameColumn(t, dr.Frames[0], "summary")
	if cause[0] != "ICE in the only AZ in use (us-east-1)" {
		t.Errorf("first row %q, want us-east-1's finding", cause[0])
	}
	last := len(cause) - 1
	if cause[last] != "Region us-west-2 could not be evaluated" || region[last] != "us-west-2" || !strings.Contains(summary[last], "Missing permission") {
		t.Errorf("last row %q / %q / %q, want one row for us-west-2 with the fix", cause[last], region[last], summary[last])
	}

	// Every region refused: the query's error, the 403 a panel gets.
	if dr := diagnoseIn(d, "us-west-2"); dr.Status != 403 || !strings.Contains(dr.Error.Error(), "region us-west-2") {
		t.Errorf("status %d error %v, want CloudWatch's 403 naming the region", dr.Status, dr.Error)
	}

	sent := len(east.Calls()) + len(west.Calls())
	for _, bad := range []string{"eu-west-1", "us-east1", "$region"} {
		if dr := diagnoseIn(d, "us-east-1,"+bad); dr.Error == nil || dr.Status != 400 || !strings.Contains(dr.Error.Error(), bad) {
			t.Errorf("region %q: status %d error %v, want a 400 naming it", bad, dr.Status, dr.Error)
		}
	}
	if now := len(east.Calls()) + len(west.Calls()); now != sent {
		t.Errorf("a bad region sent %d queries", now-sent)
	}
}

// TestDiagnosisReadsScalingPolicies: the diagnosis query judges an IC against the policy its
// AWS client reads: at its max capacity now the cause is the capacity; below it, or over a
// past range (today's copies say nothing of then), the policy that did not scale out;
// without the permission, the usual load (and a notice says so).
func TestDiagnosisReadsScalingPolicies(t *testing.T) {
	load := func(c call) (*fakeResponse, error) {
		switch {
		case c.op == "query_range" && strings.Contains(c.expr, semconv.ConcurrentRequestsPerCopy):
			var pts []string
			for at := c.start; !at.After(c.end); at = at.Add(c.step) {
				pts = append(pts, fmt.Sprintf(`[%d,"12"]`, at.Unix()))
			}
			return okJSON(fmt.Sprintf(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{%q:"ic-a"},"values":[%s]}]}}`,
				semconv.DimInferenceComponentName, strings.Join(pts, ","))), nil
		case c.op == "query" && strings.Contains(c.expr, semconv.DCGMGPUUtil):
			return okJSON(fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{%q:"chat",%q:"ic-a"},"value":[%d,"1"]}]}}`,
				semconv.LabelEndpoint, semconv.LabelInferenceComp, c.t.Unix())), nil
		case c.op == "query":
			return okJSON(`{"status":"success","data":{"resultType":"vector","result":[]}}`), nil
		}
		return okJSON(`{"status":"success","data":{"resultType":"matrix","result":[]}}`), nil
	}
	policy := []awsapi.ScalableTarget{{ResourceID: "inference-component/ic-a", InferenceComponent: "ic-a", Min: 1, Max: 4,
		Policies: []awsapi.ScalingPolicy{{Metric: "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution", Target: 8}}}}
	inventory := func(copies int) awsapi.Inventory {
		return awsapi.Inventory{Endpoints: []awsapi.Endpoint{{Name: "chat", Components: []awsapi.Component{{Name: "ic-a", Endpoint: "chat", DesiredCopies: copies}}}}}
	}
	for _, tc := range []struct {
		name        string
		aws         *fakeAWS
		past        bool // the range ended a day ago
		cause, note string
	}{
		{"at max", &fakeAWS{scaling: policy, inventory: inventory(4)}, false, "Scaled to its max capacity and still over target", ""},
		{"at max now, a past range", &fakeAWS{scaling: policy, inventory: inventory(4)}, true, "Autoscaling did not fire", ""},
		{"below max", &fakeAWS{scaling: policy, inventory: inventory(2)}, false, "Autoscaling did not fire", ""},
		// A steady 12 is its own usual level: nothing to say without the policy.
		{"no permission", &fakeAWS{scalingErr: &awsapi.PermissionError{Action: awsapi.ActionDescribeScalableTargets, Err: fmt.Errorf("denied")}}, false, "", "autoscaling policies could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newAWSDatasource(t, &fakeUpstream{answer: load}, tc.aws)
			q := dataQuery("D", `{"queryType":"diagnosis"}`)
			q.QueryType = "diagnosis"
			to := time.Now()
			if tc.past {
				to = to.Add(-24 * time.Hour)
			}
			q.TimeRange = backend.TimeRange{From: to.Add(-3 * time.Hour), To: to}
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil || resp.Responses["D"].Error != nil || len(resp.Responses["D"].Frames) != 1 {
				t.Fatalf("diagnosis failed: %v %v", err, resp.Responses["D"].Error)
			}
			f := resp.Responses["D"].Frames[0]
			causes := frameColumn(t, f, "cause")
			if tc.cause != "" && (len(causes) == 0 || causes[0] != tc.cause) {
				t.Errorf("causes %q, want %q first", causes, tc.cause)
			}
			if tc.cause == "" && len(causes) > 0 {
				t.Errorf("causes %q, want none", causes)
			}
			var notes []string
			if f.Meta != nil {
				for _, n := range f.Meta.Notices {
					notes = append(notes, n.Text)
				}
			}
			if tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
				t.Errorf("notices %q lack %q", notes, tc.note)
			}
			if !slices.Contains(tc.aws.Calls(), "ScalingTargets") {
				t.Errorf("AWS calls %v: the policies were not read", tc.aws.Calls())
			}
		})
	}
}

// A diagnosis scope that is not a string is refused with the query JSON's problem and the
// shape to send, not run.
func TestDiagnosisScopeNotAString(t *testing.T) {
	fake := &fakeUpstream{}
	d := newTestDatasource(t, fake)
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
		dataQuery("A", `{"queryType":"diagnosis","endpoint":5}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Responses["A"]
	if r.Error == nil || !strings.Contains(r.Error.Error(), "the query JSON is invalid (json: cannot unmarshal number") || r.Status != backend.StatusBadRequest {
		t.Errorf("got status %d, error %v; want 400 naming the invalid JSON", r.Status, r.Error)
	}
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("%d upstream calls for a refused query", n)
	}
}
