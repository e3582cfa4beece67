package stack

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// dashboardQueries are typical panel queries of the three dashboards (catalog §6).
var dashboardQueries = []struct{ name, expr string }{
	{"ttft-p99-by-framework", `histogram_quantile(0.99, sum by ("aws.sagemaker.inference_framework") (rate({"vllm:time_to_first_token_seconds"}[5m])))`},
	{"kv-cache-by-ic", `100 * avg by ("aws.sagemaker.inference_component.name") ({"vllm:kv_cache_usage_perc"})`},
	{"output-tps-by-instance", `sum by ("@resource.host.id") (rate({"vllm:generation_tokens_total"}[5m]))`},
	{"gpu-util-by-instance", `avg by ("@resource.host.id") (DCGM_FI_DEV_GPU_UTIL)`},
	{"gpu-memory-pct-by-instance", `100 * sum by ("@resource.host.id") (DCGM_FI_DEV_FB_USED) / (sum by ("@resource.host.id") (DCGM_FI_DEV_FB_USED) + sum by ("@resource.host.id") (DCGM_FI_DEV_FB_FREE))`},
	{"cpu-pct-by-instance", `100 * (1 - avg by ("@resource.host.id") (rate(node_cpu_seconds_total{mode="idle"}[5m])))`},
	{"invocations-by-instance", `sum by (InstanceId) (sum_over_time(InvocationsByInstanceId[5m]))`},
	{"model-latency-p90", `histogram_quantile(0.9, sum by (EndpointName) (sum_over_time(ModelLatency[5m])))`},
}

// BenchmarkDashboardQueries measures signed query_range requests (6 h at 60 s, as a
// dashboard's default view) against the emulator holding 24 h of the 200-instance x 8-GPU
// fleet. The baseline, measured in the same run, is a one-series query (the cheapest request
// the API can answer): the ratio is a panel's cost over the HTTP + signature floor.
func BenchmarkDashboardQueries(b *testing.B) {
	st, err := Start(context.Background(), Options{Fleet: fleet.Large(200, 8), History: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c := &http.Client{Transport: awsauth.NewSigner(http.DefaultTransport,
		credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), st.Region, awsauth.SigningService, nil)}
	rangeQuery := func(b *testing.B, expr string) {
		form := url.Values{"query": {expr}, "start": {strconv.FormatInt(st.End.Add(-6*time.Hour).Unix(), 10)},
			"end": {strconv.FormatInt(st.End.Unix(), 10)}, "step": {"60"}}
		for range b.N {
			resp, err := c.PostForm(st.URL+"/api/v1/query_range", form)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("%s: HTTP %d: %s", expr, resp.StatusCode, body)
			}
		}
	}
	b.Run("baseline-one-series", func(b *testing.B) {
		rangeQuery(b, `node_memory_MemTotal_bytes{"@resource.host.id"="`+firstHost(b, st)+`"}`)
	})
	for _, q := range dashboardQueries {
		b.Run(q.name, func(b *testing.B) { rangeQuery(b, q.expr) })
	}
}

func firstHost(b *testing.B, st *Stack) string {
	q, err := st.DB.Querier(st.End.Add(-time.Hour).UnixMilli(), st.End.UnixMilli())
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	vals, _, err := q.LabelValues(context.Background(), "@resource.host.id", nil)
	if err != nil || len(vals) == 0 {
		b.Fatalf("no hosts: %v", err)
	}
	return vals[0]
}
