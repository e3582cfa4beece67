package alarms_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestMonitoringAccountAcrossRegions: one emulator process serving fleet.TwoRegions (a
// monitoring account whose endpoints are split between itself and a source account in each
// region; its alarms, all in the monitoring account, select series by name only), reached
// through the router. Every endpoint and IC is one row in its own account (its ARN's),
// coloured by the alarms that see it, with no stray rows in the alarms' account; only the
// saturated IC of us-east-1 is in ALARM.
func TestMonitoringAccountAcrossRegions(t *testing.T) {
	fs := fleet.TwoRegions()
	m := dstest.Regions(t, stack.MultiOptions{
		Options: stack.Options{Seed: 15, History: 3 * time.Hour, End: stack.PinnedEnd},
		Regions: []stack.Region{{Fleet: fs[0], Scenario: "kv-saturation"}, {Fleet: fs[1]}},
	})
	jsonData, secure := m.DataSourceSettings()
	delete(jsonData, "regionEndpoints") // the router: one endpoint, each request answered as the region it is signed for
	d := newDatasource(t, jsonData, secure)

	// The model: every endpoint and IC of both fleets, in its endpoint's account; the
	// default alarms watch every IC and every endpoint without ICs.
	want := map[string]string{} // region/type/name → account
	alarmed := map[string]bool{}
	for _, f := range fs {
		for _, e := range f.Endpoints {
			want[f.Region+"/endpoint/"+e.Name] = e.Account
			alarmed[f.Region+"/endpoint/"+e.Name] = len(e.InferenceComponents) == 0
			for _, ic := range e.InferenceComponents {
				want[f.Region+"/inference_component/"+ic.Name] = e.Account
				alarmed[f.Region+"/inference_component/"+ic.Name] = true
			}
		}
	}
	js, _ := json.Marshal(map[string]any{"region": "us-east-1,us-west-2"})
	res, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "alarms", JSON: js, TimeRange: backend.TimeRange{From: m.End.Add(-3 * time.Hour), To: m.End},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 {
		t.Fatalf("%v, %d frames", r.Error, len(r.Frames))
	}
	got := map[string]string{}
	var red []string
	for _, row := range rows(t, r.Frames[0]) {
		k := row["region"] + "/" + row["resource_type"] + "/" + row["resource"]
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = row["account"]
		if alarmed[k] != (row["alarms"] != "0") {
			t.Errorf("%s (account %s) has %s alarms; the fleet's default alarms watch it: %v", k, row["account"], row["alarms"], alarmed[k])
		}
		if row["state"] == "ALARM" {
			red = append(red, k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rows, want %d", len(got), len(want))
	}
	for k, account := range want {
		if got[k] != account {
			t.Errorf("%s: account %q, want %q", k, got[k], account)
		}
	}
	if len(red) != 1 || red[0] != "us-east-1/inference_component/"+affected {
		t.Errorf("rows in ALARM %v, want us-east-1's %s only", red, affected)
	}

	// The endpoint variable over both regions lists both fleets' endpoints.
	var endpoints []string
	for _, f := range fs {
		for _, e := range f.Endpoints {
			endpoints = append(endpoints, e.Name)
		}
	}
	slices.Sort(endpoints)
	var values struct{ Values []string }
	if err := callResource(d, "inventory/endpoints?region=us-west-2,us-east-1", &values); err != nil || !slices.Equal(values.Values, endpoints) {
		t.Errorf("inventory/endpoints = %v (%v), want %v", values.Values, err, endpoints)
	}
	// Every AWS call reached the region it was signed for, and every signature verified.
	for _, region := range m.Names() {
		if c := m.Region(region).Counts(); c.Received == 0 || c.Refused != 0 || c.Verified != c.Received {
			t.Errorf("%s: %+v, want requests all verified", region, c)
		}
	}
	if n := m.Unrouted(); n != 0 {
		t.Errorf("%d requests named no region the emulator serves", n)
	}
}
