// Package regions_test checks multi-region support end to end: the plugin (plugin.New, the
// production client factory, real promclient and SigV4) against one emulator process serving
// two regions with two accounts each (fleet.TwoRegions), through the router that answers
// every request as the region it is signed for, and through per-region endpoints.
package regions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

var regions = []string{"us-east-1", "us-west-2"}

// startTwo serves fleet.TwoRegions (us-east-1 plays eastScenario) with per-region listeners.
func startTwo(t *testing.T, eastScenario string) *stack.Multi {
	t.Helper()
	fs := fleet.TwoRegions()
	m := dstest.Regions(t, stack.MultiOptions{
		Options:         stack.Options{Seed: 11, History: 2 * time.Hour, End: stack.PinnedEnd},
		Regions:         []stack.Region{{Fleet: fs[0], Scenario: eastScenario}, {Fleet: fs[1]}},
		RegionListeners: true,
	})
	return m
}

// newDatasource is a data source over m as provisioned by cmd/emulator: with perRegion only
// jsonData.regionEndpoints (each region its own listener), else only the router as the one
// endpoint for every region.
func newDatasource(t *testing.T, m *stack.Multi, perRegion bool) *plugin.Datasource {
	t.Helper()
	jsonData, secure := m.DataSourceSettings()
	if perRegion {
		delete(jsonData, "endpoint")
	} else {
		delete(jsonData, "regionEndpoints")
	}
	return dstest.New(t, "regions", jsonData, secure)
}

// query runs one query over the last span of the history the way a dashboard panel sends it.
func query(t *testing.T, d *plugin.Datasource, m *stack.Multi, span time.Duration, model map[string]any) backend.DataResponse {
	t.Helper()
	raw, err := json.Marshal(model)
	if err != nil {
		t.Fatal(err)
	}
	qt, _ := model["queryType"].(string)
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: qt, JSON: raw, Interval: time.Minute, MaxDataPoints: 200,
		TimeRange: backend.TimeRange{From: m.End.Add(-span), To: m.End},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Responses["A"]
}

// seriesLabels are the labels of every value field of the frames.
func seriesLabels(frames data.Frames) []data.Labels {
	var out []data.Labels
	for _, f := range frames {
		for _, fd := range f.Fields {
			if fd.Type() != data.FieldTypeTime && fd.Type() != data.FieldTypeNullableTime {
				out = append(out, fd.Labels)
			}
		}
	}
	return out
}

// instances is the fleet's instance count by region/account.
func instances() map[string]int {
	want := map[string]int{}
	for _, f := range fleet.TwoRegions() {
		for i := range f.Endpoints {
			want[f.Region+"/"+f.AccountOf(&f.Endpoints[i])] += f.Endpoints[i].InstanceCount()
		}
	}
	return want
}

// checkSigning: every request each region received was signed for it and verified there;
// none was refused and none named a region the emulator does not serve. It returns how many
// requests the regions received.
func checkSigning(t *testing.T, m *stack.Multi, before map[string]stack.Counts) int64 {
	t.Helper()
	var received int64
	for _, st := range m.Regions {
		c := st.Counts()
		got := stack.Counts{Received: c.Received - before[st.Region].Received, Verified: c.Verified - before[st.Region].Verified, Refused: c.Refused - before[st.Region].Refused}
		if got.Received == 0 || got.Refused != 0 || got.Verified != got.Received {
			t.Errorf("%s: %+v; want every request verified for its region and none refused", st.Region, got)
		}
		received += got.Received
	}
	if n := m.Unrouted(); n != 0 {
		t.Errorf("%d requests named a region the emulator does not serve", n)
	}
	return received
}

func counts(m *stack.Multi) map[string]stack.Counts {
	out := map[string]stack.Counts{}
	for _, st := range m.Regions {
		out[st.Region] = st.Counts()
	}
	return out
}

// A dashboard panel with region = All (both regions, joined with "," as the frontend sends a
// multi-value variable) shows both regions' instances, each labelled with its region, and
// every request was signed for the region it went to. Through the router and through
// per-region endpoints alike.
func TestRegionAllShowsBothRegionsInstances(t *testing.T) {
	m := startTwo(t, "healthy")
	for _, perRegion := range []bool{false, true} {
		t.Run(fmt.Sprintf("regionEndpoints=%v", perRegion), func(t *testing.T) {
			d := newDatasource(t, m, perRegion)
			before, routed := counts(m), m.Routed()
			// The aggregation drops @aws.region: the plugin must add it back per region.
			dr := query(t, d, m, 30*time.Minute, map[string]any{
				"expr":         `count by ("@resource.host.id", "@aws.account") (node_memory_MemTotal_bytes{"@aws.account"=~".*"})`,
				"legendFormat": "{{@aws.region}} {{@aws.account}} {{@resource.host.id}}",
				"range":        true, "region": "us-east-1,us-west-2",
			})
			if dr.Error != nil {
				t.Fatalf("query failed: %v", dr.Error)
			}
			got := map[string]int{}
			hosts := map[string]string{}
			for _, l := range seriesLabels(dr.Frames) {
				region, host := l[sc.LabelRegion], l[sc.LabelHostID]
				if !slices.Contains(regions, region) || host == "" {
					t.Fatalf("series %v lacks its region or host", l)
				}
				if r, dup := hosts[host]; dup {
					t.Errorf("host %s answered by %s and %s", host, r, region)
				}
				hosts[host] = region
				got[region+"/"+l[sc.LabelAccount]]++
			}
			if want := instances(); !maps.Equal(got, want) {
				t.Errorf("instances by region/account %v, want %v", got, want)
			}
			for _, f := range dr.Frames {
				if name := f.Fields[1].Config.DisplayNameFromDS; !strings.HasPrefix(name, "us-") || strings.Contains(name, "{{") {
					t.Errorf("legend %q does not start with the region", name)
				}
			}
			n := checkSigning(t, m, before)
			// Per-region endpoints bypass the router; the one endpoint is the router.
			if via := m.Routed() - routed; perRegion && via != 0 || !perRegion && via != n {
				t.Errorf("the router passed on %d of the %d requests", via, n)
			}
		})
	}
}

// The regions resource finds both regions (one discovery call each, signed for each).
func TestRegionsResourceFindsBothRegions(t *testing.T) {
	m := startTwo(t, "healthy")
	d := newDatasource(t, m, false)
	before := counts(m)
	var got []*backend.CallResourceResponse
	err := d.CallResource(context.Background(), &backend.CallResourceRequest{Path: "regions", Method: "GET", URL: "/api/datasources/uid/regions/resources/regions"},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { got = append(got, r); return nil }))
	if err != nil || len(got) != 1 || got[0].Status != 200 {
		t.Fatalf("regions: %v %v", err, got)
	}
	var names []string
	if err := json.Unmarshal(got[0].Body, &names); err != nil || !slices.Equal(names, regions) {
		t.Fatalf("regions = %s (%v), want %v", got[0].Body, err, regions)
	}
	checkSigning(t, m, before)
}

// A region that is mistyped, left as an uninterpolated variable or not allowed gets a clear
// error naming the fix, and the emulator receives nothing at all.
func TestBadRegionSendsNothing(t *testing.T) {
	m := startTwo(t, "healthy")
	d := newDatasource(t, m, false)
	for _, tc := range []struct {
		region string
		want   []string
	}{
		{"us-east1", []string{`region "us-east1" is not an AWS region name`, "did you mean us-east-1?"}},
		// Shaped like a region, so refused as not allowed, with the near miss suggested.
		{"us-east-1,us-wst-2", []string{`region "us-wst-2" is not allowed`, "did you mean us-west-2?"}},
		{"$region", []string{`region "$region" is not an AWS region name`}},
		{"eu-west-1", []string{`region "eu-west-1" is not allowed by this data source`, "jsonData.allowedRegions", "us-east-1, us-west-2"}},
		{"us-west-2,eu-west-1", []string{`region "eu-west-1" is not allowed`}},
	} {
		before := m.Received()
		dr := query(t, d, m, 30*time.Minute, map[string]any{"expr": `count(node_memory_MemTotal_bytes)`, "range": true, "region": tc.region})
		if dr.Error == nil {
			t.Errorf("region %q: no error", tc.region)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(dr.Error.Error(), w) {
				t.Errorf("region %q: error %q lacks %q", tc.region, dr.Error, w)
			}
		}
		if dr.Status != backend.StatusBadRequest || dr.ErrorSource != backend.ErrorSourceDownstream {
			t.Errorf("region %q: status %d source %q, want a 400 downstream error", tc.region, dr.Status, dr.ErrorSource)
		}
		if n := m.Received() - before; n != 0 {
			t.Errorf("region %q: the emulator received %d requests, want none", tc.region, n)
		}
	}
}

// Diagnosis over both regions, us-east-1 out of its instance type in every zone and us-west-2
// healthy (the same instance types): every finding names its region, the top one sends
// us-east-1's load to us-west-2, and every request was signed for the region it went to.
func TestDiagnosisNamesTheRegionOfEachFinding(t *testing.T) {
	m := startTwo(t, "ice-exhaustion")
	d := newDatasource(t, m, false)
	before := counts(m)
	dr := query(t, d, m, 2*time.Hour, map[string]any{"queryType": "diagnosis", "region": "us-east-1,us-west-2"})
	if dr.Error != nil || len(dr.Frames) != 1 {
		t.Fatalf("diagnosis: %v, %d frames", dr.Error, len(dr.Frames))
	}
	f := dr.Frames[0]
	column := func(name string) []string {
		fd, _ := f.FieldByName(name)
		if fd == nil {
			t.Fatalf("the findings frame has no %s column", name)
		}
		out := make([]string, fd.Len())
		for i := range out {
			out[i] = fmt.Sprint(fd.At(i))
		}
		return out
	}
	region, cause, summary, severity := column("region"), column("cause"), column("summary"), column("severity")
	if len(region) == 0 {
		t.Fatal("no findings")
	}
	for i := range region {
		t.Logf("%d. %s %s: %s", i+1, severity[i], cause[i], summary[i])
	}
	for i := range region {
		if !slices.Contains(regions, region[i]) || !strings.Contains(cause[i], "("+region[i]+")") || !strings.HasPrefix(summary[i], region[i]+": ") {
			t.Errorf("row %d does not name its region: %q / %q / %q", i+1, region[i], cause[i], summary[i])
		}
		// Idle capacity is a standing condition of the fleet's layout, not an incident.
		if region[i] == "us-west-2" && (severity[i] == "critical" || severity[i] == "warning") && !strings.HasPrefix(cause[i], "idle capacity") {
			t.Errorf("healthy us-west-2 has a %s finding: %s", severity[i], summary[i])
		}
	}
	if region[0] != "us-east-1" || !strings.Contains(cause[0], "another region has capacity") || !strings.Contains(summary[0], "us-west-2") {
		t.Errorf("top finding %q / %q / %q, want us-east-1's ICE with us-west-2 as the region with capacity", region[0], cause[0], summary[0])
	}
	checkSigning(t, m, before)
}
