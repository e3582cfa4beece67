// Package process_test starts the plugin binary as Grafana does and drives it against the
// emulator stack; it lives in the rig module because the stack needs the Prometheus TSDB.
package process_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// TestPluginProcess builds the plugin binary, starts it as Grafana does and drives Save &
// test, a query and the editor's resource calls over the plugin gRPC protocol, against the
// SigV4-verifying CloudWatch emulator with a simulated fleet.
func TestPluginProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the plugin binary and runs it against the emulator stack")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, st, pc := startWithStack(ctx, t)

	t.Run("CheckHealth", func(t *testing.T) {
		res, err := p.CheckHealth(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "SageMaker metrics are present") {
			t.Errorf("health %v: %s", res.Status, res.Message)
		}
		if strings.Contains(res.Message, st.SecretKey) {
			t.Error("health message leaks the secret key")
		}
	})

	t.Run("Grafana's [aws] settings reach the plugin", func(t *testing.T) {
		gated := pc
		ds := *pc.DataSourceInstanceSettings
		ds.ID, ds.UID = 2, "gated"
		gated.DataSourceInstanceSettings = &ds
		gated.GrafanaConfig = backend.NewGrafanaCfg(map[string]string{"AWS_AUTH_AllowedAuthProviders": "default,ec2_iam_role"})
		res, err := p.CheckHealth(ctx, gated)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != backend.HealthStatusError || !strings.Contains(res.Message, `"keys" is not allowed`) {
			t.Errorf("health %v: %s; want the disallowed auth type named", res.Status, res.Message)
		}
	})

	t.Run("QueryData", func(t *testing.T) {
		resp, err := p.QueryData(ctx, &backend.QueryDataRequest{
			PluginContext: pc,
			Headers:       map[string]string{"FromAlert": "true"},
			Queries: []backend.DataQuery{
				{
					RefID:         "A",
					JSON:          json.RawMessage(`{"expr":"sum by (\"aws.sagemaker.endpoint.name\") (vllm:num_requests_running)","legendFormat":"{{aws.sagemaker.endpoint.name}}","range":true,"instant":true}`),
					TimeRange:     backend.TimeRange{From: st.End.Add(-15 * time.Minute), To: st.End},
					Interval:      time.Minute,
					MaxDataPoints: 200,
				},
				{
					RefID:     "B",
					JSON:      json.RawMessage(`{"expr":"sum(","instant":true}`),
					TimeRange: backend.TimeRange{From: st.End.Add(-15 * time.Minute), To: st.End},
				},
				{
					RefID:     "D",
					QueryType: "diagnosis",
					JSON:      json.RawMessage(`{"queryType":"diagnosis"}`),
					TimeRange: backend.TimeRange{From: st.End.Add(-30 * time.Minute), To: st.End},
				},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		a := resp.Responses["A"]
		if a.Error != nil {
			t.Fatalf("A: %v", a.Error)
		}
		var ranged, instant int
		for _, f := range a.Frames {
			if f.RefID != "A" || f.Meta == nil {
				t.Fatalf("frame without refId/meta: %+v", f)
			}
			switch f.Meta.Type {
			case "timeseries-multi":
				ranged++
				if f.Fields[1].Len() < 10 {
					t.Errorf("range series with %d points, want ≥10", f.Fields[1].Len())
				}
			case "numeric-multi":
				instant++
			}
		}
		if ranged == 0 || instant == 0 {
			t.Errorf("got %d range and %d instant frames, want both kinds", ranged, instant)
		}
		if d := resp.Responses["D"]; d.Error != nil || len(d.Frames) != 1 || d.Frames[0].RefID != "D" {
			t.Errorf("diagnosis: error %v, %d frames; want one findings table", d.Error, len(d.Frames))
		}
		b := resp.Responses["B"]
		if b.Error == nil || b.ErrorSource != backend.ErrorSourceDownstream || b.Status != 400 {
			t.Errorf("B: status %d source %q error %v, want CloudWatch's 400 as a downstream error", b.Status, b.ErrorSource, b.Error)
		}
	})

	t.Run("CallResource", func(t *testing.T) {
		call := func(method, path, query, body string) []string {
			t.Helper()
			url := "/api/datasources/uid/sagemaker/resources/" + path
			if query != "" {
				url += "?" + query
			}
			resp, err := p.CallResource(ctx, &backend.CallResourceRequest{
				PluginContext: pc, Path: path, Method: method, URL: url, Body: []byte(body),
				Headers: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != 200 {
				t.Fatalf("%s %s: status %d: %s", method, path, resp.Status, resp.Body)
			}
			var env struct {
				Data []string `json:"data"`
			}
			if err := json.Unmarshal(resp.Body, &env); err != nil {
				t.Fatalf("%s: %v: %s", path, err, resp.Body)
			}
			return env.Data
		}
		labels := call("POST", "api/v1/labels", "", "match%5B%5D=DCGM_FI_DEV_GPU_UTIL&limit=40000")
		for _, want := range []string{semconv.LabelEndpoint, semconv.LabelHostID} {
			if !slices.Contains(labels, want) {
				t.Errorf("labels %v lack %s", labels, want)
			}
		}
		hosts := call("GET", "api/v1/label/U___40_resource_2e_host_2e_id/values", "limit=10", "")
		if len(hosts) == 0 || !strings.HasPrefix(hosts[0], "i-") {
			t.Errorf("host ids %v", hosts)
		}
	})
}
