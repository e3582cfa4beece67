package models

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

var (
	from = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	to   = from.Add(time.Hour)
)

func dataQuery(js string) backend.DataQuery {
	return backend.DataQuery{
		RefID:         "A",
		MaxDataPoints: 1200,
		Interval:      2 * time.Second,
		TimeRange:     backend.TimeRange{From: from, To: to},
		JSON:          json.RawMessage(js),
	}
}

func TestParseQuery(t *testing.T) {
	base := Query{
		RefID: "A", Expr: "up", Range: true, IntervalFactor: 1,
		IntervalMs: 2000, MaxDataPoints: 1200, TimeRange: backend.TimeRange{From: from, To: to},
	}
	with := func(f func(q *Query)) Query {
		q := base
		f(&q)
		return q
	}
	tests := []struct {
		name    string
		dq      backend.DataQuery
		want    Query
		wantErr []string
	}{
		{name: "neither range nor instant means range", dq: dataQuery(`{"expr":"up"}`), want: base},
		{name: "instant only", dq: dataQuery(`{"expr":"up","instant":true,"range":false}`), want: with(func(q *Query) { q.Range, q.Instant = false, true })},
		{name: "both", dq: dataQuery(`{"expr":"up","instant":true,"range":true}`), want: with(func(q *Query) { q.Instant = true })},
		{
			name: "every field of a saved Prometheus panel",
			dq: dataQuery(`{"refId":"B","datasource":{"type":"prometheus","uid":"x"},"expr":"sum(rate(x[$__rate_interval]))","range":true,"instant":false,
				"legendFormat":"{{aws.sagemaker.endpoint.name}}","interval":" 30s ","intervalFactor":2,"format":"table","utcOffsetSec":3600,
				"exemplar":true,"editorMode":"code","queryType":"promql","intervalMs":15000,"maxDataPoints":500,"hide":false}`),
			want: with(func(q *Query) {
				q.Expr, q.LegendFormat, q.Interval, q.IntervalFactor = "sum(rate(x[$__rate_interval]))", "{{aws.sagemaker.endpoint.name}}", "30s", 2
				q.UTCOffsetSec, q.QueryType = 3600, "promql"
				q.IntervalMs = 15000
			}),
		},
		// Format is the browser's (src/format.ts reshapes the frames); exemplars do not exist
		// in CloudWatch; editorMode is the editor's. The backend ignores them, whatever their type.
		{name: "format, exemplar and editorMode are ignored", dq: dataQuery(`{"expr":"up","format":{},"exemplar":"maybe","editorMode":7}`), want: base},
		{name: "string bools and numbers", dq: dataQuery(`{"expr":"up","instant":"true","range":"false","intervalFactor":"3","utcOffsetSec":"-18000"}`),
			want: with(func(q *Query) { q.Range, q.Instant, q.IntervalFactor, q.UTCOffsetSec = false, true, 3, -18000 })},
		{name: "numeric interval kept as seconds text", dq: dataQuery(`{"expr":"up","interval":30}`), want: with(func(q *Query) { q.Interval = "30" })},
		{name: "interval of the wrong type", dq: dataQuery(`{"expr":"up","interval":[]}`), wantErr: []string{`field "interval" must be a duration string`}},
		{name: "intervalFactor 0 becomes 1", dq: dataQuery(`{"expr":"up","intervalFactor":0}`), want: base},
		{name: "absurd utc offset ignored", dq: dataQuery(`{"expr":"up","utcOffsetSec":999999}`), want: base},
		{name: "maxDataPoints from JSON when the request has none",
			dq: func() backend.DataQuery {
				d := dataQuery(`{"expr":"up","maxDataPoints":300}`)
				d.MaxDataPoints = 0
				return d
			}(),
			want: with(func(q *Query) { q.MaxDataPoints = 300 })},
		{name: "refId and queryType from JSON when the request has none",
			dq: func() backend.DataQuery {
				d := dataQuery(`{"refId":"Z","expr":"up","queryType":"diagnosis"}`)
				d.RefID = ""
				return d
			}(),
			want: with(func(q *Query) { q.RefID, q.QueryType = "Z", "diagnosis" })},
		{name: "diagnosis needs no expr",
			dq:   func() backend.DataQuery { d := dataQuery(`{"scenario":"x"}`); d.QueryType = "diagnosis"; return d }(),
			want: with(func(q *Query) { q.Expr, q.QueryType = "", "diagnosis" })},
		{name: "empty expr", dq: dataQuery(`{"expr":"  "}`), wantErr: []string{"query A: expr is empty: enter a PromQL expression"}},
		{name: "missing expr", dq: dataQuery(`{}`), wantErr: []string{"expr is empty"}},
		{name: "null JSON", dq: dataQuery(`null`), wantErr: []string{"expr is empty"}},
		{name: "expr not a string", dq: dataQuery(`{"expr":42}`), wantErr: []string{`query A: field "expr" must be a string`}},
		{name: "range not a bool", dq: dataQuery(`{"expr":"up","range":"sometimes"}`), wantErr: []string{`field "range" must be true or false`}},
		{name: "factor not a number", dq: dataQuery(`{"expr":"up","intervalFactor":"x"}`), wantErr: []string{`field "intervalFactor" must be a number`}},
		{name: "offset out of range", dq: dataQuery(`{"expr":"up","utcOffsetSec":1e300}`), wantErr: []string{`field "utcOffsetSec" is out of range`}},
		{name: "array instead of object", dq: dataQuery(`[1]`), wantErr: []string{"query A: the query model is not a JSON object"}},
		{name: "several errors", dq: dataQuery(`{"expr":1,"legendFormat":2}`), wantErr: []string{`"expr"`, `"legendFormat"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseQuery(tc.dq)
			if checkWantErr(t, err, tc.wantErr, got) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestQueryHelpers(t *testing.T) {
	for qt, want := range map[string]bool{"": true, "promql": true, "diagnosis": false, "other": false} {
		if got := (&Query{QueryType: qt}).IsPromQL(); got != want {
			t.Errorf("IsPromQL(%q) = %v", qt, got)
		}
	}
	if got := (&Query{IntervalMs: 1500}).RequestInterval(); got != 1500*time.Millisecond {
		t.Errorf("RequestInterval = %v", got)
	}
}

// FuzzParseQuery feeds arbitrary query JSON. The parser must not panic, and whatever it
// accepts must satisfy the invariants the rest of the plugin relies on.
func FuzzParseQuery(f *testing.F) {
	f.Fuzz(func(t *testing.T, js []byte, queryType string) {
		dq := dataQuery(string(js))
		dq.QueryType = queryType
		q, err := ParseQuery(dq)
		if err != nil {
			if q != nil {
				t.Fatal("error with a non-nil query")
			}
			return
		}
		if !q.Range && !q.Instant {
			t.Fatal("accepted query runs neither range nor instant")
		}
		if q.IsPromQL() && strings.TrimSpace(q.Expr) == "" {
			t.Fatal("accepted a PromQL query without expr")
		}
		if q.IntervalFactor < 1 || q.IntervalMs < 0 || q.UTCOffsetSec < -86400 || q.UTCOffsetSec > 86400 {
			t.Fatalf("out-of-range numbers survived: %+v", q)
		}
	})
}
