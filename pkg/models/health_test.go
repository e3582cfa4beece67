package models

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

func TestParseHealthQuery(t *testing.T) {
	tests := []struct {
		name    string
		qt, js  string
		want    HealthQuery
		wantErr []string
	}{
		{name: "empty model: no filters, table", qt: QueryTypeAlarms, js: ``,
			want: HealthQuery{Format: FormatTable}},
		{name: "All and $__all mean any", qt: QueryTypeInventory, js: `{"endpoint":"All","inferenceComponent":"$__all"}`,
			want: HealthQuery{Format: FormatTable}},
		{name: "several names, trimmed and deduplicated", qt: QueryTypeAlarms, js: `{"endpoint":"chat, embed,chat","inferenceComponent":"{chat-llama,chat-qwen}","thresholdFallback":true}`,
			want: HealthQuery{Endpoints: []string{"chat", "embed"}, Components: []string{"chat-llama", "chat-qwen"}, ThresholdFallback: true, Format: FormatTable}},
		{name: "thresholdFallback as a string", qt: QueryTypeAlarms, js: `{"thresholdFallback":"true"}`,
			want: HealthQuery{ThresholdFallback: true, Format: FormatTable}},
		{name: "annotations", qt: QueryTypeAlarmHistory, js: `{"format":"annotations"}`,
			want: HealthQuery{Format: FormatAnnotations}},
		{name: "a format left on an alarms query is ignored", qt: QueryTypeAlarms, js: `{"format":"time_series"}`,
			want: HealthQuery{Format: FormatTable}},
		{name: "an undefined variable means any", qt: QueryTypeInventory, js: `{"endpoint":"$endpoint"}`,
			want: HealthQuery{Format: FormatTable}},
		{name: "unknown format", qt: QueryTypeInventory, js: `{"format":"heatmap"}`,
			wantErr: []string{`"format" "heatmap" is unknown`, `"table"`, `"annotations"`}},
		{name: "a regex is no SageMaker name", qt: QueryTypeAlarms, js: `{"endpoint":"chat|embed"}`,
			wantErr: []string{`field "endpoint"`, `"chat|embed" is not a SageMaker name`, `joined by ","`}},
		{name: "a name too long", qt: QueryTypeAlarms, js: `{"inferenceComponent":"` + strings.Repeat("a", 64) + `"}`,
			wantErr: []string{`field "inferenceComponent"`, "at most 63 characters"}},
		{name: "a filter longer than the input bound", qt: QueryTypeAlarms, js: `{"endpoint":"` + strings.Repeat("a,", 600) + `"}`,
			wantErr: []string{"more than the 1024 accepted"}},
		{name: "too many names", qt: QueryTypeAlarms, js: `{"endpoint":"` + strings.Repeat("a,", 300) + `"}`,
			wantErr: []string{"301 names are more than the 200 accepted"}},
		{name: "wrong types name their fields", qt: QueryTypeAlarms, js: `{"endpoint":3,"thresholdFallback":"maybe","format":[]}`,
			wantErr: []string{`"endpoint" must be a string`, `"thresholdFallback" must be true or false`, `"format" must be a string`}},
		{name: "not an object", qt: QueryTypeAlarms, js: `[1]`, wantErr: []string{"not a JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dq := dataQuery(tt.js)
			got, err := ParseHealthQuery(dq, tt.qt)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("want an error, got %+v", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.RefID, want.QueryType, want.TimeRange = "A", tt.qt, dq.TimeRange
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("got  %+v\nwant %+v", *got, want)
			}
		})
	}
}

func TestParseHealthQueryRefusesAnInvertedRange(t *testing.T) {
	dq := dataQuery(`{}`)
	dq.TimeRange = backend.TimeRange{From: to, To: from}
	if _, err := ParseHealthQuery(dq, QueryTypeAlarmHistory); err == nil || !strings.Contains(err.Error(), "ends") {
		t.Fatalf("want the time range refused, got %v", err)
	}
}

func TestQueryTypeOfKnowsTheHealthTypes(t *testing.T) {
	for _, qt := range []string{QueryTypeAlarms, QueryTypeAlarmHistory, QueryTypeInventory} {
		got, err := QueryTypeOf(backend.DataQuery{JSON: []byte(`{"queryType":"` + qt + `"}`)})
		if err != nil || got != qt {
			t.Errorf("%s: got %q, %v", qt, got, err)
		}
	}
}

// FuzzParseNames: whatever a dashboard interpolates, the filter is refused with an error or
// is a list of distinct SageMaker names; nothing panics.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"", "All", "chat,embed", "{a,b}", "$ep", "a,,b", "chat|embed", "-x", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		names, err := ParseNames(v)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] || len(n) > maxSageMakerName || !sageMakerName.MatchString(n) {
				t.Fatalf("%q gave %q", v, names)
			}
			seen[n] = true
		}
	})
}

func TestPluginQueryCheck(t *testing.T) {
	for _, c := range []struct {
		q  PluginQuery
		ok bool
	}{
		{PluginQuery{RefID: "A", QueryType: QueryTypeAlarms, ThresholdFallback: true}, true},
		{PluginQuery{RefID: "A", QueryType: QueryTypeInventory, Format: FormatAnnotations}, true},
		{PluginQuery{RefID: "A", QueryType: QueryTypeAlarmHistory, Format: FormatTable}, true},
		{PluginQuery{RefID: "A", QueryType: QueryTypeDiagnosis}, true},
		{PluginQuery{QueryType: QueryTypeAlarms}, false},
		{PluginQuery{RefID: "A", QueryType: QueryTypePromQL}, false},
		{PluginQuery{RefID: "A", QueryType: QueryTypeInventory, ThresholdFallback: true}, false},
		{PluginQuery{RefID: "A", QueryType: QueryTypeAlarms, Format: FormatTable}, false},
		{PluginQuery{RefID: "A", QueryType: QueryTypeInventory, Format: "csv"}, false},
	} {
		if err := c.q.Check(); (err == nil) != c.ok {
			t.Errorf("%+v: Check() = %v, want ok=%v", c.q, err, c.ok)
		}
	}
}

// The model dashboards write is the one the backend reads: each field of a PluginQuery comes
// back from its JSON through QueryTypeOf and ParseHealthQuery.
func TestPluginQueryReadsBack(t *testing.T) {
	for _, q := range []PluginQuery{
		{RefID: "A", QueryType: QueryTypeAlarms, Region: "us-west-2", Endpoint: "chat", InferenceComponent: "ic-1", ThresholdFallback: true},
		{RefID: "B", QueryType: QueryTypeInventory, Datasource: &DataSourceRef{Type: PluginID, UID: "sm"}, Endpoint: "a,b", Format: FormatAnnotations},
	} {
		js, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		dq := backend.DataQuery{RefID: q.RefID, JSON: js}
		qt, err := QueryTypeOf(dq)
		if err != nil || qt != q.QueryType {
			t.Fatalf("%s: query type %q (%v), want %q", js, qt, err, q.QueryType)
		}
		h, err := ParseHealthQuery(dq, qt)
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		want := &HealthQuery{RefID: q.RefID, QueryType: q.QueryType, Endpoints: strings.Split(q.Endpoint, ","),
			Components: nil, ThresholdFallback: q.ThresholdFallback, Format: q.Format, Region: q.Region}
		if q.InferenceComponent != "" {
			want.Components = []string{q.InferenceComponent}
		}
		if want.Format == "" {
			want.Format = FormatTable
		}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("%s read back as %+v, want %+v", js, h, want)
		}
	}
}
