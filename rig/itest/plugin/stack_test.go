// Package plugin_test runs the datasource (production client factory, SigV4 signing) against
// the emulator stack; it lives in the rig module because the stack needs the Prometheus TSDB.
package plugin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// startStack runs the emulator with a short history of the healthy fleet and returns a
// datasource (production client factory) configured for it the way a user would.
func startStack(t *testing.T) (*stack.Stack, *plugin.Datasource) {
	t.Helper()
	return startScenario(t, "healthy")
}

// startScenario is startStack with another scenario of the simulator.
func startScenario(t *testing.T, scenario string) (*stack.Stack, *plugin.Datasource) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: backfills a simulated fleet into a TSDB and serves the emulator")
	}
	st, err := stack.Start(context.Background(), stack.Options{Scenario: scenario, History: 30 * time.Minute})
	if err != nil {
		t.Fatalf("starting the emulator stack: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	jsonData, secure := st.DataSourceSettings()
	return st, dstest.New(t, "stack", jsonData, secure)
}

// With OTel enrichment off the account still publishes native series, and Save & test names
// the switch that brings the vended ones.
func TestHealthWarnsWhenEnrichmentIsOff(t *testing.T) {
	_, d := startScenario(t, "enrichment-off")
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, semconv.EnrichmentSwitch) || strings.Contains(res.Message, "SageMaker metrics are present.") {
		t.Errorf("health %v: %s", res.Status, res.Message)
	}
}

func TestAgainstEmulator(t *testing.T) {
	st, d := startStack(t)
	ctx := context.Background()

	t.Run("health", func(t *testing.T) {
		res, err := d.CheckHealth(ctx, &backend.CheckHealthRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "SageMaker metrics are present") {
			t.Errorf("health %v: %s", res.Status, res.Message)
		}
	})

	t.Run("range query", func(t *testing.T) {
		q := backend.DataQuery{
			RefID: "A",
			JSON: json.RawMessage(`{"expr":"avg by (\"aws.sagemaker.endpoint.name\") (DCGM_FI_DEV_GPU_UTIL)",` +
				`"legendFormat":"{{aws.sagemaker.endpoint.name}}","range":true}`),
			TimeRange:     backend.TimeRange{From: st.End.Add(-20 * time.Minute), To: st.End},
			Interval:      time.Minute,
			MaxDataPoints: 100,
		}
		resp, err := d.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.Responses["A"]
		if dr.Error != nil {
			t.Fatalf("query failed: %v", dr.Error)
		}
		if len(dr.Frames) == 0 {
			t.Fatal("no frames")
		}
		for _, f := range dr.Frames {
			if len(f.Fields) != 2 || f.Fields[1].Len() < 10 {
				t.Fatalf("frame %v has no usable series (want ≥10 points over 20m at 1m)", f)
			}
			name := f.Fields[1].Config.DisplayNameFromDS
			if name == "" || strings.Contains(name, "{{") {
				t.Errorf("legend not applied: %q", name)
			}
			if _, ok := f.Fields[1].Labels[semconv.LabelEndpoint]; !ok {
				t.Errorf("series lacks the dotted label %s: %v", semconv.LabelEndpoint, f.Fields[1].Labels)
			}
		}
	})

	t.Run("labels return the dotted and @ names", func(t *testing.T) {
		resp := callResource(t, d, http.MethodGet, "api/v1/labels?match%5B%5D=DCGM_FI_DEV_GPU_UTIL&limit=40000", "")
		names := stringData(t, resp)
		for _, want := range []string{semconv.LabelEndpoint, semconv.LabelHostID, semconv.LabelAZ} {
			if !slices.Contains(names, want) {
				t.Errorf("labels %v lack %s", names, want)
			}
		}
	})

	t.Run("label values by escaped name", func(t *testing.T) {
		for _, path := range []string{
			"api/v1/label/U___40_resource_2e_host_2e_id/values",
			"api/v1/label/%40resource.host.id/values",
			"api/v1/label/@resource.host.id/values",
		} {
			values := stringData(t, callResource(t, d, http.MethodGet, path, ""))
			if len(values) == 0 || !strings.HasPrefix(values[0], "i-") {
				t.Errorf("%s: host ids %v, want instance ids", path, values)
			}
		}
		endpoints := stringData(t, callResource(t, d, http.MethodPost,
			"api/v1/label/aws.sagemaker.endpoint.name/values", "limit=100"))
		if len(endpoints) == 0 {
			t.Error("no endpoint names")
		}
	})
}

// stringData decodes a successful {"status":"success","data":[...strings]} resource answer.
func stringData(t *testing.T, resp *backend.CallResourceResponse) []string {
	t.Helper()
	if resp.Status != 200 {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	var env struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &env); err != nil || env.Status != "success" {
		t.Fatalf("not a success envelope (%v): %s", err, resp.Body)
	}
	return env.Data
}

// callResource sends one resource call the way Grafana forwards it; target is the path
// below the datasource's resources, with its query string.
func callResource(t *testing.T, d *plugin.Datasource, method, target, body string) *backend.CallResourceResponse {
	t.Helper()
	path, _, _ := strings.Cut(target, "?")
	var headers map[string][]string
	if method == http.MethodPost {
		headers = map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}
	}
	var got []*backend.CallResourceResponse
	err := d.CallResource(context.Background(), &backend.CallResourceRequest{
		Path: path, Method: method, URL: "/api/datasources/uid/stack/resources/" + target, Headers: headers, Body: []byte(body),
	}, backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		got = append(got, r)
		return nil
	}))
	if err != nil || len(got) != 1 {
		t.Fatalf("CallResource: %v, %d responses (want 1)", err, len(got))
	}
	return got[0]
}
