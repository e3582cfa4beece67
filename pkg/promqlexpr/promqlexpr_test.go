package promqlexpr

import (
	"testing"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestWriting(t *testing.T) {
	cases := []struct{ name, got, want string }{
		{"legacy label bare", Label("mode"), `mode`},
		{"dotted label quoted", Label(sc.LabelEndpoint), `"aws.sagemaker.endpoint.name"`},
		{"@ label quoted", Label(sc.LabelHostID), `"@resource.host.id"`},
		{"colon metric bare", Sel(sc.VLLMRunning, Re(sc.LabelEndpoint, "$endpoint")), `vllm:num_requests_running{"aws.sagemaker.endpoint.name"=~"$endpoint"}`},
		{"dotted metric inside braces", Sel("http.server.active_requests", Eq("mode", "idle")), `{"http.server.active_requests", mode="idle"}`},
		{"no matchers", Sel("Invocations"), `Invocations`},
		{"value escaped", Eq("EndpointName", `a"b\c`), `EndpointName="a\"b\\c"`},
		{"variable untouched", Re(sc.LabelAZ, "$az"), `"@resource.cloud.availability_zone"=~"$az"`},
		{"regex value", Re("mode", `idle|a\.b`), `mode=~"idle|a\\.b"`},
		{"hyphenated label quoted", Eq("a-b", "x"), `"a-b"="x"`},
		{"digit-first label quoted", Label("9lives"), `"9lives"`},
		{"hyphenated metric inside braces", Sel("a-b"), `{"a-b"}`},
		{"not equal", Neq(sc.LabelInferenceComp, ""), `"aws.sagemaker.inference_component.name"!=""`},
		{"grouping", Agg("sum", []string{sc.LabelHostID, "mode"}, "x"), `sum by ("@resource.host.id", mode) (x)`},
		{"no grouping", Agg("sum", nil, "x"), `sum (x)`},
		{"tag", Tag("x", "signal", "kv"), `label_replace(x, "signal", "kv", "", "")`},
		{"pair", KVUsage.Each(func(m string) string { return "max(" + m + ")" }), `max(vllm:kv_cache_usage_perc) or max(sglang:token_usage)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("got %s, want %s", c.got, c.want)
			}
		})
	}
}
