package plugin

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// TestBadInputRefusedBeforeAnyCall: unknown query types, absurd time ranges and oversized
// inputs get a clear downstream error and cost no upstream request.
func TestBadInputRefusedBeforeAnyCall(t *testing.T) {
	huge := strings.Repeat("e", 1<<20)
	at := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	inRange := func(from, to time.Time) func() backend.DataQuery {
		return func() backend.DataQuery {
			q := dataQuery("A", `{"expr":"up"}`)
			q.TimeRange = backend.TimeRange{From: from, To: to}
			return q
		}
	}
	tests := []struct {
		name  string
		query func() backend.DataQuery
		want  []string
	}{
		{"unknown queryType in the request", func() backend.DataQuery {
			q := dataQuery("A", `{"expr":"up"}`)
			q.QueryType = "logs"
			return q
		}, []string{`queryType "logs" is unknown`, "promql, diagnosis, alarms, alarmHistory, inventory"}},
		{"unknown queryType in the model", func() backend.DataQuery { return dataQuery("A", `{"expr":"up","queryType":"traceql"}`) },
			[]string{`queryType "traceql" is unknown`}},
		{"year 1", inRange(at(1).Add(time.Hour), at(2026)), []string{"outside the years 1970–2199"}},
		{"year 2500", inRange(at(2026), at(2500)), []string{"outside the years 1970–2199"}},
		{"diagnosis in year 2500", func() backend.DataQuery {
			q := inRange(at(2499), at(2500))()
			q.RefID, q.QueryType = "D", "diagnosis"
			return q
		}, []string{"outside the years 1970–2199"}},
		{"inverted range", inRange(at(2026), at(2025)), []string{"ends (2025-01-01T00:00:00Z) before it starts (2026-01-01T00:00:00Z)"}},
		{"1 MB expression", func() backend.DataQuery { return dataQuery("A", `{"expr":"`+huge+`"}`) },
			[]string{"expr is 1048576 bytes long", "shorten it"}},
		{"1 MB endpoint name in a diagnosis query", func() backend.DataQuery {
			q := dataQuery("D", `{"endpoint":"`+huge+`"}`)
			q.QueryType = "diagnosis"
			return q
		}, []string{"diagnosis query: endpoint is 1048576 bytes long"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeUpstream{}
			d := newTestDatasource(t, fake)
			q := tc.query()
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses[q.RefID]
			if dr.Error == nil || dr.Status != backend.StatusBadRequest || dr.ErrorSource != backend.ErrorSourceDownstream {
				t.Fatalf("got %v (%d %s), want a 400 downstream error", dr.Error, dr.Status, dr.ErrorSource)
			}
			for _, w := range tc.want {
				if !strings.Contains(dr.Error.Error(), w) {
					t.Errorf("error %q lacks %q", dr.Error, w)
				}
			}
			if len(dr.Error.Error()) > 1000 {
				t.Errorf("the error echoes the input: %d bytes", len(dr.Error.Error()))
			}
			if n := len(fake.Calls()); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
		})
	}
}

func TestOversizedResourceInputRefused(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	for name, rc := range map[string]resourceCall{
		"label name":   {method: "GET", path: "api/v1/label/" + huge + "/values"},
		"match[]":      {method: "GET", path: "api/v1/series", query: "match%5B%5D=" + huge},
		"query":        {method: "POST", path: "api/v1/query", body: "query=" + huge},
		"many match[]": {method: "GET", path: "api/v1/labels", query: strings.Repeat("match%5B%5D=up&", 101)},
	} {
		t.Run(name, func(t *testing.T) {
			fake := &fakeUpstream{}
			d := newTestDatasource(t, fake)
			resp := callResource(t, d, rc)
			if resp.Status != http.StatusBadRequest || len(resp.Body) > 1000 {
				t.Errorf("status %d, %d bytes of body; want a short 400", resp.Status, len(resp.Body))
			}
			if n := len(fake.Calls()); n != 0 {
				t.Errorf("%d upstream calls", n)
			}
		})
	}
}
