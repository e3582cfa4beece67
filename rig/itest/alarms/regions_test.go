package alarms_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestTwoRegionsAndAccountsThroughThePlugin: two emulators, us-east-1 (account 1111…, its IC
// saturated) and us-west-2 (account 2222…, healthy), with the same endpoint and IC names,
// behind one data source with an endpoint per region (each request signed for its region and
// verified by that region's emulator). One query over both regions shows each region's rows
// with its account, ties the alarm in ALARM to us-east-1's IC only, and a region the
// emulators do not serve is named in the error while the others' rows stay.
func TestTwoRegionsAndAccountsThroughThePlugin(t *testing.T) {
	const keyID, secret = "AKIDREGIONSTEST", "regions-test-secret"
	const eastAccount, westAccount = "111111111111", "222222222222"
	in := func(region, account string) *fleet.Fleet {
		f := fleet.Default()
		f.Region, f.Account = region, account
		return f
	}
	east := dstest.Stack(t, stack.Options{Scenario: "kv-saturation", Region: "us-east-1", Fleet: in("us-east-1", eastAccount), AccessKey: keyID, SecretKey: secret})
	west := dstest.Stack(t, stack.Options{Scenario: "healthy", Region: "us-west-2", Fleet: in("us-west-2", westAccount), AccessKey: keyID, SecretKey: secret})
	d := newDatasource(t, map[string]any{
		"authType": "keys", "defaultRegion": "us-east-1", "endpoint": east.URL, "timeInterval": "60s",
		"regionEndpoints": map[string]string{"us-west-2": west.URL},
	}, map[string]string{"accessKey": keyID, "secretKey": secret})
	run := func(qt string, model map[string]any) backend.DataResponse {
		t.Helper()
		js, _ := json.Marshal(model)
		res, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: qt, JSON: js, TimeRange: backend.TimeRange{From: east.End.Add(-3 * time.Hour), To: east.End},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Responses["A"]
	}
	account := map[string]string{"us-east-1": eastAccount, "us-west-2": westAccount}
	names := func() []string {
		var out []string
		for _, e := range fleet.Default().Endpoints {
			out = append(out, e.Name)
		}
		slices.Sort(out)
		return out
	}()

	t.Run("alarms", func(t *testing.T) {
		dr := run("alarms", map[string]any{"region": "us-east-1,us-west-2"})
		if dr.Error != nil || len(dr.Frames) != 1 {
			t.Fatalf("%v, %d frames", dr.Error, len(dr.Frames))
		}
		endpoints := map[string][]string{}
		var red []string
		for _, r := range rows(t, dr.Frames[0]) {
			if r["account"] != account[r["region"]] || !strings.Contains(r["console_url"], "region="+r["region"]) {
				t.Errorf("row %s in %s: account %q, console %s", r["resource"], r["region"], r["account"], r["console_url"])
			}
			if r["resource_type"] == "endpoint" {
				endpoints[r["region"]] = append(endpoints[r["region"]], r["endpoint"])
			}
			if r["state"] == "ALARM" {
				red = append(red, r["resource"]+"@"+r["region"])
				if !strings.Contains(r["alarm_url"], "region="+r["region"]) {
					t.Errorf("alarm link %s is not for %s", r["alarm_url"], r["region"])
				}
			}
		}
		for region := range account {
			slices.Sort(endpoints[region])
			if !slices.Equal(endpoints[region], names) {
				t.Errorf("endpoints of %s: %v, want %v", region, endpoints[region], names)
			}
		}
		if !slices.Equal(red, []string{affected + "@us-east-1"}) {
			t.Errorf("rows in ALARM %v, want only %s in us-east-1", red, affected)
		}
	})

	t.Run("alarmHistory", func(t *testing.T) {
		dr := run("alarmHistory", map[string]any{"region": "us-west-2,us-east-1", "format": "table"})
		if dr.Error != nil {
			t.Fatal(dr.Error)
		}
		var to []string
		for _, r := range rows(t, dr.Frames[0]) {
			if r["alarm"] == "kv-cache-"+affected && r["to"] == "ALARM" {
				to = append(to, r["region"]+"/"+r["account"])
			}
		}
		if len(to) == 0 || slices.ContainsFunc(to, func(s string) bool { return s != "us-east-1/"+eastAccount }) {
			t.Errorf("transitions of kv-cache-%s to ALARM in %v, want us-east-1's only", affected, to)
		}
	})

	t.Run("inventory", func(t *testing.T) {
		dr := run("inventory", map[string]any{"region": "us-east-1,us-west-2"})
		if dr.Error != nil {
			t.Fatal(dr.Error)
		}
		variants := map[string]int{}
		for _, r := range rows(t, dr.Frames[0]) {
			if r["account"] != account[r["region"]] {
				t.Errorf("row %v: account of another region", r)
			}
			if r["kind"] == "variant" {
				variants[r["region"]]++
			}
		}
		if variants["us-east-1"] != len(names) || variants["us-west-2"] != len(names) {
			t.Errorf("variant rows per region %v, want %d each", variants, len(names))
		}
		var res struct{ Values []string }
		if err := callResource(d, "inventory/endpoints?region=us-east-1,us-west-2", &res); err != nil || !slices.Equal(res.Values, names) {
			t.Errorf("inventory/endpoints over both regions = %v (%v), want %v", res.Values, err, names)
		}
	})

	t.Run("a region not served", func(t *testing.T) {
		// eu-west-1 goes to jsonData.endpoint (us-east-1's emulator), signed for eu-west-1:
		// refused as CloudWatch refuses a credential scoped to another region.
		dr := run("inventory", map[string]any{"region": "us-east-1,eu-west-1"})
		if dr.Error == nil || !strings.Contains(dr.Error.Error(), "region eu-west-1: ") || strings.Contains(dr.Error.Error(), "region us-east-1") {
			t.Fatalf("error %v, want one naming eu-west-1", dr.Error)
		}
		if len(dr.Frames) != 1 {
			t.Fatalf("%d frames", len(dr.Frames))
		}
		n := 0
		for _, r := range rows(t, dr.Frames[0]) {
			if r["region"] != "us-east-1" {
				t.Errorf("row of %s", r["region"])
			}
			n++
		}
		if n == 0 {
			t.Error("us-east-1's rows are gone")
		}
	})
}
