package process_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// panicRange is the diagnosis range for which the rule compiled in with the build tag
// inferscope_testpanic panics (pkg/diagnosis/testpanic.go, PanicRange). The tag is set only
// on this test's build of the plugin: the shipped binary has no such rule.
const panicRange = 17 * time.Minute

// TestPanickingRuleKeepsThePluginUp builds the plugin with a rule that panics, drives a
// diagnosis that runs it over gRPC, and proves the process answers that query (the rule shown
// as not evaluated, with the panic), the other queries of the same request, and later calls.
// A panic in a rule's goroutine once ended the process and every panel with it.
func TestPanickingRuleKeepsThePluginUp(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the plugin binary and runs it against the emulator stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, st, pc := startWithStack(ctx, t, "-tags", "inferscope_testpanic")

	diagnosis := func(ref string, span time.Duration) backend.DataQuery {
		return backend.DataQuery{RefID: ref, QueryType: "diagnosis", JSON: json.RawMessage(`{"queryType":"diagnosis"}`),
			TimeRange: backend.TimeRange{From: st.End.Add(-span), To: st.End}}
	}
	promql := backend.DataQuery{RefID: "Q", JSON: json.RawMessage(`{"expr":"count(DCGM_FI_DEV_GPU_UTIL)","instant":true}`),
		TimeRange: backend.TimeRange{From: st.End.Add(-10 * time.Minute), To: st.End}}

	for round := range 2 {
		resp, err := p.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pc, Queries: []backend.DataQuery{diagnosis("P", panicRange), diagnosis("D", 30*time.Minute), promql}})
		if err != nil {
			t.Fatalf("round %d: the plugin stopped answering: %v", round, err)
		}
		pr := resp.Responses["P"]
		if pr.Error != nil || len(pr.Frames) != 1 {
			t.Fatalf("round %d: the panicking diagnosis: error %v, %d frames; want its table", round, pr.Error, len(pr.Frames))
		}
		fr := pr.Frames[0]
		causes, summaries := fr.Fields[2], fr.Fields[4]
		found := false
		for i := range causes.Len() {
			if causes.At(i).(string) == "Rule test-panic could not be evaluated" && strings.Contains(summaries.At(i).(string), "slice bounds out of range") {
				found = true
			}
		}
		if !found {
			t.Errorf("round %d: the panicking rule is not shown as not evaluated with its panic", round)
		}
		if d := resp.Responses["D"]; d.Error != nil || len(d.Frames) != 1 {
			t.Errorf("round %d: the other diagnosis: error %v", round, d.Error)
		}
		if q := resp.Responses["Q"]; q.Error != nil || len(q.Frames) == 0 {
			t.Errorf("round %d: the PromQL query: error %v", round, q.Error)
		}
	}
	if res, err := p.CheckHealth(ctx, pc); err != nil || res.Status != backend.HealthStatusOk {
		t.Fatalf("after the panics: health %v, %v", res, err)
	}
}
