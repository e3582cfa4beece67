package simulator

import (
	"testing"
)

func TestSmoke(t *testing.T) {
	db := backfilled(t, "healthy", 6)
	for _, e := range []string{
		`count({__name__=~".+"})`,
		`sum by ("aws.sagemaker.inference_component.name") ({"vllm:num_requests_running"})`,
		`avg by ("aws.sagemaker.inference_component.name") ({"vllm:kv_cache_usage_perc"})`,
		`histogram_quantile(0.5, sum by ("aws.sagemaker.inference_component.name") (rate({"vllm:time_to_first_token_seconds"}[5m])))`,
		`histogram_quantile(0.5, sum by ("aws.sagemaker.inference_component.name") (rate({"sglang:time_to_first_token_seconds"}[5m])))`,
		`histogram_avg(sum by (EndpointName) (sum_over_time(ModelLatency[5m])))`,
		`sum by (EndpointName) (sum_over_time(Invocations[5m]))`,
		`avg by ("@resource.host.id") (DCGM_FI_DEV_GPU_UTIL)`,
		`count by ("aws.sagemaker.inference_component.name") (count_over_time(e2e_duration[6h]))`,
		`max by ("aws.sagemaker.inference_component.name") (max_over_time(cold_start_duration[6h]))`,
		`ConcurrentRequestsPerCopy`,
	} {
		t.Logf("%s => %v", e, query(t, db, e, "aws.sagemaker.inference_component.name"))
	}
}
