package diagnosis

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestFrame(t *testing.T) {
	fs := []Finding{
		{Cause: "KV cache saturation", Severity: Critical, Target: Target{Level: LevelIC, Name: "ic-a", Endpoint: "ep-a"}, Summary: "s1",
			Evidence: []Evidence{{What: "KV", Value: "97%", Query: "q1"}, {What: "waiting", Value: "6", Query: "q2"}}, Next: "n1", PanelLink: "/d/x?viewPanel=7"},
		{Cause: "Slow cold start", Severity: Warning, Target: Target{Level: LevelEndpoint, Name: "ep-b", Endpoint: "ep-b"}, Evidence: []Evidence{{What: "total", Value: "7m", Query: "q1"}}},
	}
	fr := Frame(fs)
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
	if c := fr.Fields[2].Config; c == nil || len(c.Links) != 1 || !strings.Contains(c.Links[0].URL, "link") {
		t.Fatalf("the cause column must link to the panel: %+v", c)
	}
	if fr.Meta.ExecutedQueryString != "q1\nq2" {
		t.Fatalf("executed queries %q, want the distinct evidence queries", fr.Meta.ExecutedQueryString)
	}
	if empty := Frame(nil); len(empty.Fields) != len(want) {
		t.Fatal("an empty diagnosis still has the table's columns")
	}
}

func TestHandleQuery(t *testing.T) {
	d := newData(t)
	for _, ep := range []string{"ep-a", "ep-b"} {
		d.float(lbls(semconv.VLLMKVCacheUsage, engLabels(ep, "", "i-"+ep, "az-1")...), constant(0.97))
		d.float(lbls(semconv.VLLMWaiting, engLabels(ep, "", "i-"+ep, "az-1")...), constant(5))
	}
	q := d.querier()
	dq := func(js string) backend.DataQuery {
		return backend.DataQuery{RefID: "D", QueryType: "diagnosis", JSON: json.RawMessage(js), TimeRange: backend.TimeRange{From: t0, To: tEnd()}}
	}
	cases := []struct {
		name    string
		json    string
		rows    int
		wantErr string
	}{
		{"fleet", `{"queryType":"diagnosis"}`, 2, ""},
		{"All", `{"endpoint":"All","inferenceComponent":"$__all"}`, 2, ""},
		{"regex all", `{"endpoint":".*"}`, 2, ""},
		{"one endpoint", `{"endpoint":"ep-a","inferenceComponent":".*"}`, 1, ""},
		{"undefined variable", `{"endpoint":"$endpoint"}`, 2, ""},
		{"multi-value", `{"endpoint":"{ep-a,ep-b}"}`, 0, "several values"},
		{"bad JSON", `{"endpoint":`, 0, "invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := HandleQuery(context.Background(), q, dq(c.json))
			if c.wantErr != "" {
				if resp.Error == nil || !strings.Contains(resp.Error.Error(), c.wantErr) || resp.Status != backend.StatusBadRequest {
					t.Fatalf("want a 400 containing %q, got %v (%d)", c.wantErr, resp.Error, resp.Status)
				}
				return
			}
			if resp.Error != nil || len(resp.Frames) != 1 {
				t.Fatalf("error %v, %d frames", resp.Error, len(resp.Frames))
			}
			if n, _ := resp.Frames[0].RowLen(); n != c.rows || resp.Frames[0].RefID != "D" {
				t.Fatalf("rows %d (want %d), refId %q", n, c.rows, resp.Frames[0].RefID)
			}
		})
	}
	t.Run("upstream down", func(t *testing.T) {
		resp := HandleQuery(context.Background(), &failingQuerier{err: errors.New("connection refused")}, dq(`{}`))
		if resp.Error == nil || resp.Status != backend.StatusBadGateway || !strings.Contains(resp.Error.Error(), "connection refused") {
			t.Fatalf("want a 502 naming the upstream error, got %v (%d)", resp.Error, resp.Status)
		}
	})
}
