package alarms_test

// The datasource's alarms, alarmHistory and inventory queries, its inventory resources and
// Save & test against the emulator, through the production AWS client.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// start serves a scenario and returns a datasource configured for it as a user would, with
// the plugin's production clients.
func start(t *testing.T, o stack.Options) (*stack.Stack, *plugin.Datasource) {
	t.Helper()
	st := dstest.Stack(t, o)
	jsonData, secure := st.DataSourceSettings()
	return st, newDatasource(t, jsonData, secure)
}

// newDatasource is a data source with these settings and the plugin's production clients.
func newDatasource(t *testing.T, jsonData any, secure map[string]string) *plugin.Datasource {
	return dstest.New(t, "stack", jsonData, secure)
}

// query runs one query of type qt over the whole history and returns its one frame.
func query(t *testing.T, d *plugin.Datasource, st *stack.Stack, qt string, model map[string]any) *data.Frame {
	t.Helper()
	js, _ := json.Marshal(model)
	res, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: qt, JSON: js,
		TimeRange: backend.TimeRange{From: st.End.Add(-3 * time.Hour), To: st.End},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 {
		t.Fatalf("%s: error %v, %d frames", qt, r.Error, len(r.Frames))
	}
	return r.Frames[0]
}

// rows reads a frame's string-like fields by name, one map per row.
func rows(t *testing.T, fr *data.Frame) []map[string]string {
	t.Helper()
	n, _ := fr.RowLen()
	out := make([]map[string]string, n)
	for i := range n {
		out[i] = map[string]string{}
		for _, f := range fr.Fields {
			v, ok := f.ConcreteAt(i)
			if !ok {
				continue
			}
			out[i][f.Name] = fmt.Sprint(v)
		}
	}
	return out
}

func TestKVSaturationThroughThePlugin(t *testing.T) {
	st, d := start(t, stack.Options{Scenario: "kv-saturation"})
	f := fleet.Default()

	t.Run("alarms", func(t *testing.T) {
		rs := rows(t, query(t, d, st, "alarms", map[string]any{}))
		found := false
		for _, r := range rs {
			if r["resource_type"] == "inference_component" && r["inference_component"] == affected {
				found = true
				if r["state"] != "ALARM" || !strings.HasSuffix(r["alarm"], "-"+affected) || r["source"] != "alarm" {
					t.Errorf("the affected IC's row: %v", r)
				}
				continue
			}
			if r["state"] != "OK" && r["state"] != "NO_ALARM" {
				t.Errorf("%s %s is %s (%s): only %s may be in ALARM", r["resource_type"], r["resource"], r["state"], r["alarm"], affected)
			}
		}
		if !found {
			t.Fatalf("no row for %s in %v", affected, rs)
		}
	})

	t.Run("alarmHistory", func(t *testing.T) {
		rs := rows(t, query(t, d, st, "alarmHistory", map[string]any{"format": "table"}))
		var transition map[string]string
		for _, r := range rs {
			if r["alarm"] == "kv-cache-"+affected && r["from"] == "OK" && r["to"] == "ALARM" {
				transition = r
			}
		}
		if transition == nil || !strings.Contains(transition["title"], "OK → ALARM") {
			t.Fatalf("no OK → ALARM transition of kv-cache-%s in %d history rows", affected, len(rs))
		}
	})

	t.Run("inventory", func(t *testing.T) {
		var want, got []string
		for _, e := range f.Endpoints {
			want = append(want, e.Name)
		}
		for _, r := range rows(t, query(t, d, st, "inventory", map[string]any{"format": "table"})) {
			if r["kind"] == "variant" {
				got = append(got, r["endpoint"])
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("inventory variants of endpoints %v, want one per endpoint %v", got, want)
		}
		var res struct{ Values []string }
		if err := callResource(d, "inventory/endpoints", &res); err != nil || !slices.Equal(res.Values, want) {
			t.Errorf("inventory/endpoints = %v (%v), want %v", res.Values, err, want)
		}
	})
}

func TestHealthyFleetHasNothingInAlarm(t *testing.T) {
	st, d := start(t, stack.Options{Scenario: "healthy"})
	for _, r := range rows(t, query(t, d, st, "alarms", map[string]any{})) {
		if r["state"] != "OK" && r["state"] != "NO_ALARM" {
			t.Errorf("%s is %s: %s", r["resource"], r["state"], r["reason"])
		}
	}
	if rs := rows(t, query(t, d, st, "alarmHistory", map[string]any{})); len(rs) != 0 {
		t.Errorf("healthy fleet has %d alarm transitions: %v", len(rs), rs[0])
	}
}

func TestDeniedActionIsASaveAndTestWarning(t *testing.T) {
	for _, action := range []string{"sagemaker:ListEndpoints", "application-autoscaling:DescribeScalableTargets", "application-autoscaling:DescribeScalingPolicies", "cloudtrail:LookupEvents"} {
		t.Run(action, func(t *testing.T) {
			_, d := start(t, stack.Options{Scenario: "healthy", Deny: []string{action}})
			res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "Warning") || !strings.Contains(res.Message, action) ||
				strings.Contains(res.Message, "cloudwatch:DescribeAlarms") || strings.Count(res.Message, "Warning") != 1 {
				t.Errorf("health %v: %s", res.Status, res.Message)
			}
		})
	}
}

// Without sagemaker:ListInferenceComponents the inventory keeps the endpoints and their
// variants and warns naming the action; the endpoint variable still lists the endpoints.
func TestDeniedICListingDegradesTheInventory(t *testing.T) {
	st, d := start(t, stack.Options{Scenario: "healthy", Deny: []string{"sagemaker:ListInferenceComponents"}})
	fr := query(t, d, st, "inventory", map[string]any{})
	var variants int
	for _, r := range rows(t, fr) {
		if r["kind"] != "variant" {
			t.Errorf("row %v, want variants only", r)
		}
		variants++
	}
	if want := len(fleet.Default().Endpoints); variants != want {
		t.Errorf("%d variant rows, want one per endpoint (%d)", variants, want)
	}
	var warned bool
	if fr.Meta != nil {
		for _, n := range fr.Meta.Notices {
			warned = warned || n.Severity == data.NoticeSeverityWarning && strings.Contains(n.Text, "sagemaker:ListInferenceComponents")
		}
	}
	if !warned {
		t.Errorf("no warning naming sagemaker:ListInferenceComponents: %+v", fr.Meta)
	}
	var res struct{ Values []string }
	if err := callResource(d, "inventory/endpoints", &res); err != nil || len(res.Values) != variants {
		t.Errorf("inventory/endpoints = %v (%v), want the %d endpoints", res.Values, err, variants)
	}
	if err := callResource(d, "inventory/components", &res); err == nil || !strings.Contains(err.Error(), "sagemaker:ListInferenceComponents") {
		t.Errorf("inventory/components: %v, want an error naming sagemaker:ListInferenceComponents", err)
	}
}

func callResource(d *plugin.Datasource, path string, v any) error {
	var body []byte
	status := 0
	resourcePath, _, _ := strings.Cut(path, "?") // the URL keeps the query parameters
	err := d.CallResource(context.Background(), &backend.CallResourceRequest{Method: "GET", Path: resourcePath, URL: path},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
			status, body = r.Status, r.Body
			return nil
		}))
	if err != nil {
		return err
	}
	if status != 200 {
		return fmt.Errorf("status %d: %s", status, body)
	}
	return json.Unmarshal(body, v)
}

// The fleet-wide GPU memory alarm names no resource; its contributor ties it to the leaking
// instance, which gets the red tile rather than its endpoint.
func TestGPUMemoryLeakAlarmsTheInstance(t *testing.T) {
	st, d := start(t, stack.Options{Scenario: "gpu-memory-leak"})
	var red []string
	for _, r := range rows(t, query(t, d, st, "alarms", map[string]any{})) {
		switch r["state"] {
		case "ALARM":
			red = append(red, r["resource_type"]+" "+r["alarm"]+" "+r["endpoint"])
			if r["instance"] == "" {
				t.Errorf("the row in ALARM names no instance: %v", r)
			}
		case "OK", "NO_ALARM":
		default:
			t.Errorf("%s is %s: %s", r["resource"], r["state"], r["reason"])
		}
	}
	if want := []string{"instance gpu-memory chat-ic"}; !slices.Equal(red, want) {
		t.Errorf("rows in ALARM = %v, want %v", red, want)
	}
}
