package diagnosis_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

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
			resp := HandleQuery(context.Background(), []Region{{Querier: q}}, dq(c.json), nil)
			if c.wantErr != "" {
				if resp.Error == nil || !strings.Contains(resp.Error.Error(), c.wantErr) || !backend.IsDownstreamError(resp.Error) {
					t.Fatalf("want a downstream error containing %q, got %v", c.wantErr, resp.Error)
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
}

// An endpoint list (what a resource tag filter leaves: the tag's endpoints) is diagnosed as
// each endpoint alone, ranked together; endpoints off the list are not looked at.
func TestHandleQueryEndpointList(t *testing.T) {
	d := newData(t)
	for _, ep := range []string{"ep-a", "ep-b", "ep-c"} {
		d.float(lbls(semconv.VLLMKVCacheUsage, engLabels(ep, "", "i-"+ep, "az-1")...), constant(0.97))
		d.float(lbls(semconv.VLLMWaiting, engLabels(ep, "", "i-"+ep, "az-1")...), constant(5))
	}
	q := d.querier()
	for _, c := range []struct {
		endpoint, want, wantErr string
	}{
		{"ep-a, ep-c", "endpoint ep-a|endpoint ep-c", ""},
		{"ep-c,ep-c", "endpoint ep-c", ""},
		{"ep-a,All", "", "not a list of endpoint names"},
		{"ep-a,$endpoint", "", "not a list of endpoint names"},
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			js, _ := json.Marshal(map[string]string{"endpoint": c.endpoint})
			resp := HandleQuery(context.Background(), []Region{{Querier: q}}, backend.DataQuery{RefID: "D", QueryType: "diagnosis", JSON: js, TimeRange: backend.TimeRange{From: t0, To: tEnd()}}, nil)
			if c.wantErr != "" {
				if resp.Error == nil || !strings.Contains(resp.Error.Error(), c.wantErr) || !backend.IsDownstreamError(resp.Error) {
					t.Fatalf("want a downstream error containing %q, got %v", c.wantErr, resp.Error)
				}
				return
			}
			if resp.Error != nil || len(resp.Frames) != 1 {
				t.Fatalf("error %v, %d frames", resp.Error, len(resp.Frames))
			}
			fr := resp.Frames[0]
			scope, _ := fr.FieldByName("scope")
			var got []string
			for i := range scope.Len() {
				got = append(got, scope.At(i).(string))
			}
			slices.Sort(got)
			if strings.Join(got, "|") != c.want {
				t.Errorf("rows about %v, want %s", got, c.want)
			}
			last := fr.Meta.Notices[len(fr.Meta.Notices)-1].Text
			if want := "over endpoint " + strings.ReplaceAll(strings.ReplaceAll(c.want, "endpoint ", ""), "|", ", "); !strings.Contains(last, want) {
				t.Errorf("notice %q does not say %q", last, want)
			}
		})
	}
}

// Each finding shows its resource's tags (its IC's, else its endpoint's), read from the
// enriched vended metrics; a report without tags has no tags column.
func TestHandleQueryShowsResourceTags(t *testing.T) {
	d := newData(t)
	for _, ep := range []string{"ep-a", "ep-b", "ep-c"} {
		ic := ""
		if ep == "ep-c" {
			ic = "ic-c"
		}
		d.float(lbls(semconv.VLLMKVCacheUsage, engLabels(ep, ic, "i-"+ep, "az-1")...), constant(0.97))
		d.float(lbls(semconv.VLLMWaiting, engLabels(ep, ic, "i-"+ep, "az-1")...), constant(5))
	}
	d.float(lbls(semconv.Invocations, semconv.DimEndpointName, "ep-a", semconv.LabelTagPrefix+"Team", "data platform", semconv.LabelTagPrefix+`it's "q"`, `x.*|{}\`), constant(0))
	d.float(lbls(semconv.Invocations, semconv.DimEndpointName, "ep-b"), constant(0))
	d.float(lbls(semconv.Invocations, semconv.DimEndpointName, "ep-c", semconv.LabelTagPrefix+"Team", "endpoint's"), constant(0))
	d.float(lbls(semconv.InvocationsForIC, semconv.DimInferenceComponentName, "ic-c", semconv.LabelTagPrefix+"Team", "Ωmega"), constant(0))
	resp := HandleQuery(context.Background(), []Region{{Querier: d.querier()}}, backend.DataQuery{RefID: "D", QueryType: "diagnosis", JSON: json.RawMessage(`{}`), TimeRange: backend.TimeRange{From: t0, To: tEnd()}}, nil)
	if resp.Error != nil || len(resp.Frames) != 1 {
		t.Fatalf("error %v, %d frames", resp.Error, len(resp.Frames))
	}
	fr := resp.Frames[0]
	scope, _ := fr.FieldByName("scope")
	tags, i := fr.FieldByName("tags")
	if i < 0 {
		t.Fatalf("no tags column: %v", fr.Fields)
	}
	got := map[string]string{}
	for row := range scope.Len() {
		got[scope.At(row).(string)] = tags.At(row).(string)
	}
	want := map[string]string{
		"endpoint ep-a":                   `Team=data platform; it's "q"=x.*|{}\`,
		"endpoint ep-b":                   "",
		"inference-component ic-c (ep-c)": "Team=Ωmega",
	}
	if !maps.Equal(got, want) {
		t.Errorf("tags by finding %q, want %q", got, want)
	}

	untagged := newData(t)
	untagged.float(lbls(semconv.VLLMKVCacheUsage, engLabels("ep-a", "", "i-a", "az-1")...), constant(0.97))
	untagged.float(lbls(semconv.VLLMWaiting, engLabels("ep-a", "", "i-a", "az-1")...), constant(5))
	resp = HandleQuery(context.Background(), []Region{{Querier: untagged.querier()}}, backend.DataQuery{RefID: "D", QueryType: "diagnosis", JSON: json.RawMessage(`{}`), TimeRange: backend.TimeRange{From: t0, To: tEnd()}}, nil)
	if resp.Error != nil || len(resp.Frames) != 1 {
		t.Fatalf("error %v, %d frames", resp.Error, len(resp.Frames))
	}
	if _, i := resp.Frames[0].FieldByName("tags"); i >= 0 {
		t.Error("a report without tags has a tags column")
	}
}
