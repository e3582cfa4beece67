package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
)

func runOne(t *testing.T, d *Datasource, queryType, model string) backend.DataResponse {
	t.Helper()
	q := dataQuery("A", model)
	q.QueryType = queryType
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Responses["A"]
}

// thresholdVectors answers the threshold fallback's two instant queries: KV cache by IC
// (chat-qwen would be in ALARM by threshold, but it has an alarm) and GPU memory.
func thresholdVectors(c call) (*fakeResponse, error) {
	if c.op != "query" {
		return nil, fmt.Errorf("unexpected %s call", c.op)
	}
	if strings.Contains(c.expr, "DCGM_FI_DEV_FB_USED") {
		return okJSON(`{"status":"success","data":{"resultType":"vector","result":[
			{"metric":{"aws.sagemaker.endpoint.name":"embed"},"value":[1780664407,"97.5"]}]}}`), nil
	}
	return okJSON(`{"status":"success","data":{"resultType":"vector","result":[
		{"metric":{"aws.sagemaker.endpoint.name":"chat","aws.sagemaker.inference_component.name":"chat-qwen"},"value":[1780664407,"0.95"]},
		{"metric":{"aws.sagemaker.endpoint.name":"embed"},"value":[1780664407,"0.31"]}]}}`), nil
}

// TestHealthQueriesGolden: each query type and format gives the frames docs/alarms.md
// documents, field for field.
func TestHealthQueriesGolden(t *testing.T) {
	tests := []struct {
		name, queryType, model string
		upstream               func(call) (*fakeResponse, error)
	}{
		{"alarms", "alarms", `{}`, nil},
		{"alarms-threshold", "alarms", `{"thresholdFallback":true}`, thresholdVectors},
		{"alarms-filtered", "alarms", `{"endpoint":"chat","inferenceComponent":"chat-llama,chat-qwen"}`, nil},
		{"alarmHistory-table", "alarmHistory", `{}`, nil},
		{"alarmHistory-annotations", "alarmHistory", `{"format":"annotations","endpoint":"chat"}`, nil},
		{"inventory-table", "inventory", `{}`, nil},
		{"inventory-annotations", "inventory", `{"format":"annotations"}`, nil},
		{"alarms-denied", "alarms", `{}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aws := fullFake()
			if tt.name == "alarms-denied" {
				aws.alarmsErr = &awsapi.PermissionError{Action: "cloudwatch:DescribeAlarms", Err: errors.New("AccessDeniedException: not authorized")}
			}
			up := &fakeUpstream{answer: tt.upstream}
			if tt.upstream == nil {
				up.answer = func(c call) (*fakeResponse, error) { return nil, fmt.Errorf("unexpected PromQL %s call", c.op) }
			}
			dr := runOne(t, newAWSDatasource(t, up, aws), tt.queryType, tt.model)
			goldentest.CheckDataResponse(t, "testdata", tt.name, &dr, *update)
		})
	}
}

// frameColumn reads a string field by name.
func frameColumn(t *testing.T, f *data.Frame, name string) []string {
	t.Helper()
	fld, _ := f.FieldByName(name)
	if fld == nil {
		t.Fatalf("frame %s has no field %q", f.Name, name)
	}
	out := make([]string, fld.Len())
	for i := range out {
		switch v := fld.At(i).(type) {
		case string:
			out[i] = v
		case float64:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}

func TestAlarmsQuery(t *testing.T) {
	dr := runOne(t, newAWSDatasource(t, &fakeUpstream{}, fullFake()), "alarms", `{}`)
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	f := dr.Frames[0]
	got := map[string]string{}
	for i, r := range frameColumn(t, f, "resource") {
		got[r] = frameColumn(t, f, "state")[i] + " " + frameColumn(t, f, "alarm")[i]
	}
	want := map[string]string{
		"chat-llama": "ALARM kv-cache-chat-llama", "chat-qwen": "ALARM ttft-p99-by-ic", "i-0a": "INSUFFICIENT_DATA gpu-mem i-0a",
		"chat": "OK 5xx-chat", "embed": "NO_ALARM ", "new-ep": "NO_ALARM ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("states %v\nwant   %v", got, want)
	}
	if notes := noticeTexts(f); !strings.Contains(notes, "1 alarms name no SageMaker endpoint") || !strings.Contains(notes, "billing") {
		t.Errorf("the unmapped alarm is not reported: %s", notes)
	}
}

// TestThresholdFallback: resources without an alarm get their state from the thresholds
// (embed: GPU memory 97.5 % ≥ 95 %), marked as such; alarmed resources keep their alarm
// (chat-qwen reads 0.95 KV but its alarm decides); resources without readings stay NO_ALARM.
func TestThresholdFallback(t *testing.T) {
	up := &fakeUpstream{answer: thresholdVectors}
	dr := runOne(t, newAWSDatasource(t, up, fullFake()), "alarms", `{"thresholdFallback":true}`)
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	f := dr.Frames[0]
	if notes := noticeTexts(f); strings.Contains(notes, "threshold") {
		t.Errorf("warning: %s", notes)
	}
	got := map[string]string{}
	for i, r := range frameColumn(t, f, "resource") {
		got[r] = strings.Join([]string{frameColumn(t, f, "state")[i], frameColumn(t, f, "source")[i], frameColumn(t, f, "alarm")[i]}, " ")
	}
	for r, want := range map[string]string{
		"embed":     "ALARM threshold threshold: GPU memory ≥ 95 %",
		"chat-qwen": "ALARM alarm ttft-p99-by-ic",
		"chat":      "OK alarm 5xx-chat",
		"new-ep":    "NO_ALARM none ",
	} {
		if got[r] != want {
			t.Errorf("%s: %q, want %q", r, got[r], want)
		}
	}
	if n := len(up.Calls()); n != 2 {
		t.Errorf("%d PromQL calls, want the 2 threshold queries", n)
	}
}

func noticeTexts(f *data.Frame) string {
	if f.Meta == nil {
		return ""
	}
	var s []string
	for _, n := range f.Meta.Notices {
		s = append(s, n.Text)
	}
	return strings.Join(s, " | ")
}

// TestAlarmsPartialFailures: what is optional to an alarms query (inventory, contributors,
// thresholds) degrades to a warning; the alarms themselves are not optional.
func TestAlarmsPartialFailures(t *testing.T) {
	tests := []struct {
		name       string
		aws        func(*fakeAWS)
		model      string
		upstream   func(call) (*fakeResponse, error)
		wantErr    []string
		wantStatus backend.Status
		wantNote   []string
		wantNames  []string
	}{
		{name: "no SageMaker permission: alarms' resources only", aws: func(f *fakeAWS) { f.inventoryErr = denied("sagemaker:ListEndpoints") },
			wantNote:  []string{"inventory could not be read", "not allowed sagemaker:ListEndpoints"},
			wantNames: []string{"chat-llama", "chat-qwen", "i-0a", "chat"}},
		{name: "contributors refused", aws: func(f *fakeAWS) { f.contributorsErr = denied("cloudwatch:DescribeAlarmContributors") },
			wantNote:  []string{"contributors of alarm ttft-p99-by-ic could not be read", "cloudwatch:DescribeAlarmContributors"},
			wantNames: []string{"chat-llama", "i-0a", "chat", "chat-qwen", "embed", "new-ep"}},
		{name: "threshold queries refused", model: `{"thresholdFallback":true}`,
			upstream: func(call) (*fakeResponse, error) {
				return nil, backend.DownstreamErrorf("refused")
			},
			wantNote:  []string{"threshold fallback could not be evaluated", "refused"},
			wantNames: []string{"chat-llama", "chat-qwen", "i-0a", "chat", "embed", "new-ep"}},
		{name: "no DescribeAlarms permission", aws: func(f *fakeAWS) { f.alarmsErr = denied("cloudwatch:DescribeAlarms") },
			wantErr: []string{"not allowed cloudwatch:DescribeAlarms", "IAM policy"}, wantStatus: http.StatusForbidden},
		{name: "AWS failing", aws: func(f *fakeAWS) {
			f.alarmsErr = errors.New("operation error CloudWatch: DescribeAlarms, https response error StatusCode: 500")
		},
			wantErr: []string{"StatusCode: 500"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aws := fullFake()
			if tt.aws != nil {
				tt.aws(aws)
			}
			model := tt.model
			if model == "" {
				model = `{}`
			}
			dr := runOne(t, newAWSDatasource(t, &fakeUpstream{answer: tt.upstream}, aws), "alarms", model)
			if len(tt.wantErr) > 0 {
				if dr.Error == nil {
					t.Fatal("want an error")
				}
				if dr.ErrorSource != backend.ErrorSourceDownstream || tt.wantStatus != 0 && dr.Status != tt.wantStatus {
					t.Errorf("status %d source %q, want %d downstream", dr.Status, dr.ErrorSource, tt.wantStatus)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(dr.Error.Error(), w) {
						t.Errorf("error %q lacks %q", dr.Error, w)
					}
				}
				return
			}
			if dr.Error != nil {
				t.Fatal(dr.Error)
			}
			notes := noticeTexts(dr.Frames[0])
			for _, w := range tt.wantNote {
				if !strings.Contains(notes, w) {
					t.Errorf("notices %q lack %q", notes, w)
				}
			}
			if got := frameColumn(t, dr.Frames[0], "resource"); !slices.Equal(got, tt.wantNames) {
				t.Errorf("resources %v, want %v", got, tt.wantNames)
			}
		})
	}
}

func TestAlarmsPermissionErrorIs403AndRedacted(t *testing.T) {
	secret := testSettings("").DecryptedSecureJSONData["secretKey"]
	aws := fullFake()
	aws.alarmsErr = &awsapi.PermissionError{Action: "cloudwatch:DescribeAlarms", Err: errors.New("denied for " + secret)}
	dr := runOne(t, newAWSDatasource(t, &fakeUpstream{}, aws), "alarmHistory", `{}`)
	aws.historyErr = aws.alarmsErr
	dr = runOne(t, newAWSDatasource(t, &fakeUpstream{}, aws), "alarmHistory", `{}`)
	if dr.Error == nil || dr.Status != http.StatusForbidden || dr.ErrorSource != backend.ErrorSourceDownstream {
		t.Fatalf("want a downstream 403, got %d %q %v", dr.Status, dr.ErrorSource, dr.Error)
	}
	if strings.Contains(dr.Error.Error(), secret) || !strings.Contains(dr.Error.Error(), "cloudwatch:DescribeAlarms") {
		t.Errorf("error %q", dr.Error)
	}
}

// TestHealthQueriesRecoverPanics: a panic in any AWS call a query makes fails that query as
// the plugin's error when the call is its core, or leaves a warning when it is optional;
// the process lives on.
func TestHealthQueriesRecoverPanics(t *testing.T) {
	core := map[string]string{"alarms": "Alarms", "alarmHistory": "History", "inventory": "Inventory"}
	for _, op := range []string{"Alarms", "Inventory", "Contributors", "History"} {
		for _, qt := range []string{"alarms", "alarmHistory", "inventory"} {
			aws := fullFake()
			aws.panicIn = op
			dr := runOne(t, newAWSDatasource(t, &fakeUpstream{}, aws), qt, `{}`)
			switch {
			case !slices.Contains(aws.Calls(), op):
				if dr.Error != nil {
					t.Errorf("%s (no %s call): %v", qt, op, dr.Error)
				}
			case core[qt] == op:
				if dr.Error == nil || dr.ErrorSource != backend.ErrorSourcePlugin || dr.Status != backend.StatusInternal {
					t.Errorf("%s panicking in %s: want the plugin's error, got %v (%s)", op, qt, dr.Error, dr.ErrorSource)
				}
			default:
				if dr.Error != nil || !strings.Contains(noticeTexts(dr.Frames[0]), "panic") {
					t.Errorf("%s panicking in %s: want a frame with a warning, got %v", op, qt, dr.Error)
				}
			}
		}
	}
}

func TestHealthQueryBadInput(t *testing.T) {
	aws := fullFake()
	d := newAWSDatasource(t, &fakeUpstream{}, aws)
	for _, tt := range []struct{ qt, model, want string }{
		{"alarms", `{"endpoint":"chat.*"}`, "not a SageMaker name"},
		{"inventory", `{"format":"graph"}`, `"format" "graph" is unknown`},
		{"alarmHistory", `{"inferenceComponent":{}}`, `"inferenceComponent" must be a string`},
	} {
		dr := runOne(t, d, tt.qt, tt.model)
		if dr.Error == nil || !strings.Contains(dr.Error.Error(), tt.want) || dr.ErrorSource != backend.ErrorSourceDownstream {
			t.Errorf("%s %s: %v (%s)", tt.qt, tt.model, dr.Error, dr.ErrorSource)
		}
	}
	if calls := aws.Calls(); len(calls) > 0 {
		t.Errorf("bad input reached AWS: %v", calls)
	}
}

func TestAlarmHistoryAsksForTheRange(t *testing.T) {
	aws := fullFake()
	runOne(t, newAWSDatasource(t, &fakeUpstream{}, aws), "alarmHistory", `{}`)
	if len(aws.query) != 1 || !aws.query[0].From.Equal(from) || !aws.query[0].To.Equal(to) {
		t.Errorf("history asked for %+v, want %v–%v", aws.query, from, to)
	}
}

// TestContributorRefusalIsOneNotice: without cloudwatch:DescribeAlarmContributors (a policy
// written before the action existed), every multi-series alarm in ALARM fails the same way;
// the panel says so once, naming the alarms, not once per alarm.
func TestContributorRefusalIsOneNotice(t *testing.T) {
	aws := fullFake()
	for _, name := range []string{"kv-by-ic", "5xx-by-ic"} {
		aws.alarms = append(aws.alarms, awsapi.Alarm{Name: name, State: awsapi.StateAlarm,
			PromQL: `max by ("aws.sagemaker.inference_component.name") (x) > 1`})
	}
	aws.contributorsErr = denied("cloudwatch:DescribeAlarmContributors")
	dr := runOne(t, newAWSDatasource(t, &fakeUpstream{}, aws), "alarms", `{}`)
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	var refusals []string
	for _, n := range dr.Frames[0].Meta.Notices {
		if strings.Contains(n.Text, "cloudwatch:DescribeAlarmContributors") {
			refusals = append(refusals, n.Text)
		}
	}
	if len(refusals) != 1 {
		t.Fatalf("%d notices about the refusal, want 1: %q", len(refusals), refusals)
	}
	for _, name := range []string{"ttft-p99-by-ic", "kv-by-ic", "5xx-by-ic"} {
		if !strings.Contains(refusals[0], name) {
			t.Errorf("the notice does not name alarm %s: %q", name, refusals[0])
		}
	}
}
