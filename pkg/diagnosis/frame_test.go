package diagnosis

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/fault"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestFrame(t *testing.T) {
	fs := []Finding{
		{Cause: "KV cache saturation", Severity: Critical, Target: Target{Level: LevelIC, Name: "ic-a", Endpoint: "ep-a"}, Summary: "s1",
			Evidence: []Evidence{{What: "KV", Value: "97%", Query: "q1"}, {What: "waiting", Value: "6", Query: "q2"}}, Next: "n1", PanelLink: "/d/x?viewPanel=7"},
		{Cause: "Slow cold start", Severity: Warning, Target: Target{Level: LevelEndpoint, Name: "ep-b", Endpoint: "ep-b"}, Evidence: []Evidence{{What: "total", Value: "7m", Query: "q1"}}},
	}
	fr := Frame(Report{Findings: fs})
	want := []string{"rank", "severity", "cause", "scope", "summary", "evidence", "next step", "link"}
	if len(fr.Fields) != len(want) {
		t.Fatalf("fields %d, want %v", len(fr.Fields), want)
	}
	for i, w := range want {
		if fr.Fields[i].Name != w {
			t.Fatalf("field %d is %q, want %q", i, fr.Fields[i].Name, w)
		}
	}
	if n, _ := fr.RowLen(); n != 2 {
		t.Fatalf("rows %d, want 2", n)
	}
	row := func(i int) []any {
		out := make([]any, len(fr.Fields))
		for j, f := range fr.Fields {
			out[j] = f.At(i)
		}
		return out
	}
	r0 := row(0)
	if r0[0] != int64(1) || r0[1] != "critical" || r0[3] != "inference-component ic-a (ep-a)" || r0[5] != "KV: 97%; waiting: 6" || r0[7] != "/d/x?viewPanel=7" {
		t.Fatalf("row 0 = %v", r0)
	}
	if r1 := row(1); r1[0] != int64(2) || r1[3] != "endpoint ep-b" {
		t.Fatalf("row 1 = %v", r1)
	}
	if c := fr.Fields[2].Config; c == nil || len(c.Links) != 1 || c.Links[0].URL != "${__data.fields.link}&${Filters:queryparam}" {
		t.Fatalf("the cause column must link to the panel, keeping the ad-hoc filters: %+v", c)
	}
	if fr.Meta.ExecutedQueryString != "q1\nq2" {
		t.Fatalf("executed queries %q, want the distinct evidence queries", fr.Meta.ExecutedQueryString)
	}
	if empty := Frame(Report{}); len(empty.Fields) != len(want) {
		t.Fatal("an empty diagnosis still has the table's columns")
	}
}

// TestHandleQueryUpstreamDown: an upstream that fails every query comes back as that
// error, wrapped and typed, for the datasource's edge to explain. The other HandleQuery
// cases run over real series in rig/itest/diagnosis.
func TestHandleQueryUpstreamDown(t *testing.T) {
	dq := backend.DataQuery{RefID: "D", QueryType: "diagnosis", JSON: json.RawMessage(`{}`), TimeRange: backend.TimeRange{From: runFrom, To: runTo}}
	refused := errors.New("connection refused")
	resp := HandleQuery(context.Background(), []Region{{Querier: &failingQuerier{err: refused}}}, dq, nil)
	if !errors.Is(resp.Error, refused) || !strings.Contains(resp.Error.Error(), "no rule could query") {
		t.Fatalf("want the rules' error, wrapped, got %v", resp.Error)
	}
}

// partlyFailingQuerier fails the queries that contain fail and answers the others with no data.
type partlyFailingQuerier struct {
	fail string
	err  error
}

func (p partlyFailingQuerier) Instant(_ context.Context, expr string, _ time.Time) (model.Vector, error) {
	if strings.Contains(expr, p.fail) {
		return nil, p.err
	}
	return model.Vector{}, nil
}

func (p partlyFailingQuerier) Range(_ context.Context, expr string, _, _ time.Time, _ time.Duration) (model.Matrix, error) {
	if strings.Contains(expr, p.fail) {
		return nil, p.err
	}
	return model.Matrix{}, nil
}

// TestHandleQueryExplainsFailedRules: a rule whose query CloudWatch refuses is a row and a
// notice that carry the fix pkg/fault gives a panel's error, while the other rules answer.
func TestHandleQueryExplainsFailedRules(t *testing.T) {
	dq := backend.DataQuery{RefID: "D", QueryType: "diagnosis", JSON: json.RawMessage(`{}`), TimeRange: backend.TimeRange{From: runFrom, To: runTo}}
	denied := &promclient.APIError{Status: 403, Type: "AccessDeniedException", Message: "not authorized to perform GetMetricData", Cause: promclient.CauseAccessDenied}
	q := partlyFailingQuerier{fail: semconv.VLLMKVCacheUsage, err: denied}
	explain := func(_ string, err error) string { return fault.Explain(err, fault.Context{}).Message }
	cases := []struct {
		name    string
		explain func(string, error) string
		want    []string // in the notice and in the row
		wantNot string
	}{
		{"explained", explain, []string{"Missing permission", "cloudwatch:GetMetricData", "not authorized to perform GetMetricData"}, ""},
		{"no explainer: the error as it is", nil, []string{"not authorized to perform GetMetricData"}, "Missing permission"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := HandleQuery(context.Background(), []Region{{Querier: q}}, dq, c.explain)
			if resp.Error != nil || len(resp.Frames) != 1 {
				t.Fatalf("one rule failing must not fail the query: error %v, %d frames", resp.Error, len(resp.Frames))
			}
			fr := resp.Frames[0]
			var notice string
			for _, n := range fr.Meta.Notices {
				if strings.HasPrefix(n.Text, "rule kv-cache-saturation "+NotEvaluated+": ") {
					notice = n.Text
				}
			}
			var row string
			for i := range fr.Rows() {
				if fr.Fields[2].At(i) == "Rule kv-cache-saturation "+NotEvaluated {
					row = fr.Fields[4].At(i).(string)
				}
			}
			if notice == "" || row == "" {
				t.Fatalf("the failed rule needs a notice and a row; notices %v", fr.Meta.Notices)
			}
			for _, w := range c.want {
				if !strings.Contains(notice, w) || !strings.Contains(row, w) {
					t.Errorf("notice %q / row %q lack %q", notice, row, w)
				}
			}
			if c.wantNot != "" && strings.Contains(notice, c.wantNot) {
				t.Errorf("notice %q has %q", notice, c.wantNot)
			}
		})
	}
}

// TestFrameFailureRowsLink: the cause column links to "${__data.fields.link}&${Filters:…}",
// so a row with an empty link would open "&var-Filters=…", a page that does not exist. Rows
// of rules that could not run link to the rule's panel on the diagnosed scope and region; a
// region that failed as a whole links to the Performance dashboard on that region.
func TestFrameFailureRowsLink(t *testing.T) {
	start, end := time.Unix(1_700_000_000, 0), time.Unix(1_700_003_600, 0)
	scope := Scope{Endpoint: "ep-a"}
	cases := []struct {
		name    string
		failure RuleFailure
		want    string // the link's path and viewPanel
	}{
		{"rule", RuleFailure{Rule: "kv-cache-saturation", Error: "boom"}, "/d/" + panelEnginePressure.Dashboard + "?" + "viewPanel=" + itoa(panelEnginePressure.ID)},
		{"rule in a region", RuleFailure{Rule: "vram-drop", Region: "us-west-2", Error: "boom"}, "/d/" + panelGPUMemory.Dashboard + "?" + "viewPanel=" + itoa(panelGPUMemory.ID)},
		{"cross-region rule", RuleFailure{Rule: crossRegionRuleID, Error: "boom"}, "/d/" + panelICE.Dashboard + "?" + "viewPanel=" + itoa(panelICE.ID)},
		{"whole region", RuleFailure{Region: "eu-west-1", Error: "boom"}, "/d/" + dashref.Performance + "?"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Report{Scope: scope, Start: start, End: end, Failures: []RuleFailure{c.failure}}
			if c.failure.Region != "" {
				r.Regions = []string{c.failure.Region}
			}
			fr := Frame(r)
			link := fr.Fields[len(fr.Fields)-1].At(0).(string)
			u, err := url.Parse(link)
			if err != nil || !strings.HasPrefix(link, "/d/") {
				t.Fatalf("link %q: want a dashboard URL (%v)", link, err)
			}
			q := u.Query()
			if got := u.Path + "?" + keep(q, "viewPanel").Encode(); got != c.want {
				t.Fatalf("link %q opens %q, want %q", link, got, c.want)
			}
			if q.Get("var-endpoint") != "ep-a" || q.Get("from") != "1700000000000" || q.Get("to") != "1700003600000" || q.Get("var-region") != c.failure.Region {
				t.Fatalf("link %q does not carry the scope, time range and region", link)
			}
		})
	}
}

func itoa(id uint32) string { return strconv.Itoa(int(id)) }

// keep is the values of the named keys only.
func keep(v url.Values, keys ...string) url.Values {
	out := url.Values{}
	for _, k := range keys {
		if x, ok := v[k]; ok {
			out[k] = x
		}
	}
	return out
}
