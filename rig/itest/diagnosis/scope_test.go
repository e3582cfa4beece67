package diagnosis_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// A scope naming nothing with data is an error that lists what has data, not "no findings".
func TestScopeWithoutData(t *testing.T) {
	d := newData(t)
	for _, x := range [][3]string{{"chat", "llama", "i-1"}, {"chat", "qwen", "i-2"}, {"summarize", "", "i-3"}} {
		d.float(lbls(semconv.NodeMemTotal, engLabels(x[0], "", x[2], "az-1")...), constant(1e9))
		if x[1] != "" {
			d.float(lbls(semconv.DCGMGPUUtil, engLabels(x[0], x[1], x[2], "az-1")...), constant(50))
		}
	}
	cases := []struct {
		scope Scope
		want  string // "" = runs
	}{
		{Scope{Endpoint: "chat"}, ""},
		{Scope{Endpoint: "chat", InferenceComponent: "qwen"}, ""},
		{Scope{InferenceComponent: "llama"}, ""},
		{Scope{Endpoint: "summarize"}, ""},
		{Scope{Endpoint: "chta"}, `endpoint "chta" has no data between 2026-11-30 00:00 and 2026-11-30 03:00 UTC; endpoints with data: chat, summarize`},
		{Scope{Endpoint: "chat", InferenceComponent: "lama"}, `inference component "lama" has no data on endpoint chat between 2026-11-30 00:00 and 2026-11-30 03:00 UTC; inference components with data on endpoint chat: llama, qwen`},
		{Scope{Endpoint: "summarize", InferenceComponent: "llama"}, `inference components with data on endpoint summarize: none`},
		{Scope{InferenceComponent: "x"}, `inference component "x" has no data between`},
	}
	for _, c := range cases {
		t.Run(c.scope.String(), func(t *testing.T) {
			_, err := Run(context.Background(), d.querier(), c.scope, t0, tEnd(), DefaultConfig())
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			// The datasource query says the same, as the user's (downstream) error.
			js, _ := json.Marshal(map[string]string{"endpoint": c.scope.Endpoint, "inferenceComponent": c.scope.InferenceComponent})
			resp := HandleQuery(context.Background(), []Region{{Querier: d.querier()}}, backend.DataQuery{RefID: "A", JSON: js, TimeRange: backend.TimeRange{From: t0, To: tEnd()}}, nil)
			if resp.Error == nil || !backend.IsDownstreamError(resp.Error) || !strings.Contains(resp.Error.Error(), c.want) {
				t.Fatalf("diagnosis query: error %v, want a downstream error with %q", resp.Error, c.want)
			}
		})
	}
}
