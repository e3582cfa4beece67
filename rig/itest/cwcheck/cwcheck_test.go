package cwcheck

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// The checker itself must catch each rule's violation, or the tests using it prove nothing.
func TestCloudWatchChecksCatchViolations(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	cases := []struct{ name, expr, want string }{
		{"no metric name", `{"aws.sagemaker.endpoint.name"="a"}`, "no metric name"},
		{"name regex", `{__name__=~"vllm:.*"}`, "exact name"},
		{"underscore label", `vllm:num_requests_running{aws_sagemaker_endpoint_name="a"}`, "matches nothing"},
		{"underscore grouping", `sum by (resource_host_id) (vllm:num_requests_running)`, "matches nothing"},
		{"underscore on()", `a and on (aws_sagemaker_endpoint_name) b`, "matches nothing"},
		{"rate on delta", `rate(Invocations[5m])`, "delta metric"},
		{"increase on delta deep", `sum(increase(ModelLatency{EndpointName="x"}[5m]))`, "delta metric"},
		{"rate on per-instance latency", `rate(ModelLatencyByInstanceId[5m])`, "delta metric"},
		{"rate on per-copy errors", `sum(rate(Invocation5XXErrorsForIcByInstanceIdByContainerId[5m]))`, "delta metric"},
		{"irate on per-IC latency", `irate(ModelLatencyForIc[5m])`, "delta metric"},
		{"increase on per-AZ first chunk", `increase(FirstChunkModelLatencyByAzByInstanceType[5m])`, "delta metric"},
		{"clean", `sum by ("@resource.host.id") (rate(vllm:generation_tokens_total{"aws.sagemaker.endpoint.name"=~".*"}[5m]))`, ""},
		{"clean delta", `sum(sum_over_time(Invocations{EndpointName=~".*"}[5m])) / 300`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ast, err := p.ParseExpr(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(Problems(ast), "; ")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("problems %q, want one containing %q", got, c.want)
			}
		})
	}
}
