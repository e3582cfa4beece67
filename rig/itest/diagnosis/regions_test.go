package diagnosis_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// regionData is one region's synthetic series: GPUs in the AZs in use, ICE events for
// ml.g5.12xlarge per AZ (count of events), scale-outs.
type regionData struct {
	inUse     []string
	ice       map[string]int
	scaleOuts int
	down      bool // every query fails
}

func (rd regionData) querier(t *testing.T, region string) Querier {
	if rd.down {
		return downQuerier{errors.New(region + " refused the connection")}
	}
	d := newData(t)
	for _, az := range rd.inUse {
		d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "", "i-"+az, az)...), constant(50))
	}
	for az, n := range rd.ice {
		at := map[int]float64{}
		for k := range n {
			at[10+k*15] = 1
		}
		d.event(lbls(semconv.ICECount, semconv.LabelEndpoint, "ep-a", semconv.LabelEventInstanceType, "ml.g5.12xlarge", semconv.LabelEventAZ, az), at)
	}
	if rd.scaleOuts > 0 {
		at := map[int]float64{}
		for k := range rd.scaleOuts {
			at[20+k*30] = 240
		}
		d.event(lbls(semconv.ScalingE2EDuration, semconv.LabelEndpoint, "ep-a", semconv.LabelInferenceComp, "ic-a", semconv.LabelScalingDirection, semconv.ScaleOut), at)
	}
	return d.querier()
}

type downQuerier struct{ err error }

func (q downQuerier) Instant(context.Context, string, time.Time) (model.Vector, error) {
	return nil, q.err
}

func (q downQuerier) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, error) {
	return nil, q.err
}

// TestCrossRegionICE runs the ICE rules over two regions on a PromQL engine: us-east-1 out
// of ml.g5.12xlarge in both its AZs, us-west-2 in the states that do or do not give it
// capacity.
func TestCrossRegionICE(t *testing.T) {
	east := regionData{inUse: []string{"us-east-1a", "us-east-1b"}, ice: map[string]int{"us-east-1a": 3, "us-east-1b": 4}}
	cases := []struct {
		name  string
		west  regionData
		want  string // in the summary of the cross-region finding; "" = none
		rowOf string // a failure row's region
	}{
		{"west has no ICE", regionData{inUse: []string{"us-west-2a", "us-west-2b"}}, "us-west-2 has capacity (us-west-2: no ICE for ml.g5.12xlarge in any of its 2 AZs)", ""},
		{"west has ICE in one AZ of two", regionData{inUse: []string{"us-west-2a", "us-west-2b"}, ice: map[string]int{"us-west-2a": 2}}, "ICE for ml.g5.12xlarge only in us-west-2a=2, none in us-west-2b", ""},
		{"west only scaled out", regionData{scaleOuts: 2}, "us-west-2: no ICE for ml.g5.12xlarge; 2 scale-outs succeeded", ""},
		{"west exhausted too", regionData{inUse: []string{"us-west-2a", "us-west-2b"}, ice: map[string]int{"us-west-2a": 1, "us-west-2b": 1}}, "", ""},
		{"west has no data", regionData{}, "", ""},
		{"west does not answer", regionData{down: true}, "", "us-west-2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			regions := []Region{{Name: "us-east-1", Querier: east.querier(t, "us-east-1")}, {Name: "us-west-2", Querier: c.west.querier(t, "us-west-2")}}
			cfg := DefaultConfig()
			cfg.Rules = []string{"ice-exhaustion"}
			r, err := RunRegions(context.Background(), regions, Scope{}, t0, tEnd(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cross := only(r.Findings, "ice-cross-region")
			if c.want == "" {
				if len(cross) != 0 {
					t.Fatalf("want no cross-region finding, got%s", describe(cross))
				}
			} else {
				if len(cross) != 1 || r.Findings[0].Rule != "ice-cross-region" {
					t.Fatalf("want the cross-region finding first, got%s", describe(r.Findings))
				}
				f := r.Findings[0]
				if f.Region != "us-east-1" || f.Severity != Critical || f.Target.Name != "ml.g5.12xlarge" || !strings.Contains(f.Summary, c.want) ||
					!strings.Contains(f.Summary, "in all 2 AZs of us-east-1") || !strings.HasPrefix(f.Next, "Shift traffic to us-west-2") || f.PanelLink == "" {
					t.Fatalf("finding %+v, want its summary to hold %q", f, c.want)
				}
			}
			var failed []string
			for _, f := range r.Failures {
				failed = append(failed, f.Region)
			}
			if strings.Join(failed, ",") != c.rowOf {
				t.Fatalf("failures in %v, want %q", failed, c.rowOf)
			}
			fr := Frame(r)
			if fld, _ := fr.FieldByName("region"); fld == nil || fld.Len() != len(r.Findings)+len(r.Failures) {
				t.Fatal("the frame of two regions needs a region per row")
			}
		})
	}
}

// TestCrossRegionCostsNothingWithoutExhaustion: when no region is out of a type in every AZ,
// a two-region run sends what the two single-region runs send, no more.
func TestCrossRegionCostsNothingWithoutExhaustion(t *testing.T) {
	east := regionData{inUse: []string{"us-east-1a", "us-east-1b"}, ice: map[string]int{"us-east-1a": 3}}
	west := regionData{inUse: []string{"us-west-2a"}, scaleOuts: 1}
	alone := 0
	for _, rd := range []regionData{east, west} {
		alone += diagnose(t, rd.querier(t, ""), Scope{}).Requests
	}
	r, err := RunRegions(context.Background(), []Region{{Name: "us-east-1", Querier: east.querier(t, "us-east-1")}, {Name: "us-west-2", Querier: west.querier(t, "us-west-2")}}, Scope{}, t0, tEnd(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != alone {
		t.Fatalf("%d requests for two regions, %d for each alone", r.Requests, alone)
	}
}

// TestDiagnosisThroughThePluginInTwoRegions: the plugin (production clients, SigV4) against
// two stacks, each verifying that requests are signed for its own region (us-east-1 with the
// ice-exhaustion scenario, us-west-2 healthy, reached through regionEndpoints): a diagnosis
// naming both regions answers with no failed rule, a region per row, the cross-region ICE
// finding first and us-east-1's own ICE finding next, nothing above info from the healthy
// region, and the console link in the finding's region.
func TestDiagnosisThroughThePluginInTwoRegions(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills two simulated fleets behind two emulators")
	}
	start := func(region, scenario string) *stack.Stack {
		st, err := stack.Start(context.Background(), stack.Options{Scenario: scenario, Region: region, History: 3 * time.Hour, End: scenarioNow,
			AccessKey: "AKIDREGIONSTEST", SecretKey: "regions-test-secret-0123456789"})
		if err != nil {
			t.Fatalf("starting the %s stack: %v", region, err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	east, west := start("us-east-1", "ice-exhaustion"), start("us-west-2", "healthy")
	jd, secure := east.DataSourceSettings()
	d := dstest.New(t, "regions", map[string]any{"authType": jd["authType"], "defaultRegion": jd["defaultRegion"], "endpoint": jd["endpoint"],
		"timeInterval": jd["timeInterval"], "allowedRegions": []string{"us-west-2"}, "regionEndpoints": map[string]string{"us-west-2": west.URL}}, secure)
	q := backend.DataQuery{RefID: "D", QueryType: "diagnosis", JSON: json.RawMessage(`{"queryType":"diagnosis","region":"us-east-1,us-west-2"}`),
		TimeRange: backend.TimeRange{From: scenarioNow.Add(-3 * time.Hour), To: scenarioNow}}
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["D"]
	if dr.Error != nil || len(dr.Frames) != 1 {
		t.Fatalf("diagnosis failed: %v", dr.Error)
	}
	fr := dr.Frames[0]
	col := func(name string) []string {
		f, _ := fr.FieldByName(name)
		if f == nil {
			t.Fatalf("no %s column", name)
		}
		out := make([]string, f.Len())
		for i := range out {
			out[i] = f.At(i).(string)
		}
		return out
	}
	cause, region, severity, console := col("cause"), col("region"), col("severity"), col("console_url")
	for i := range cause {
		if severity[i] == "unknown" {
			t.Errorf("row %d failed: %s in %s (a request signed for the wrong region is refused)", i+1, cause[i], region[i])
		}
		if !slices.Contains([]string{"us-east-1", "us-west-2"}, region[i]) || !strings.HasSuffix(cause[i], "("+region[i]+")") {
			t.Errorf("row %d: %q in %q, want the region named", i+1, cause[i], region[i])
		}
		if console[i] != "" && !strings.Contains(console[i], "region="+region[i]) {
			t.Errorf("row %d: console link %q outside %s", i+1, console[i], region[i])
		}
		// Idle capacity is a standing condition of the fleet's layout, not an incident.
		if region[i] == "us-west-2" && severity[i] != "info" && !strings.HasPrefix(cause[i], "idle capacity") {
			t.Errorf("row %d: healthy us-west-2 has a %s finding: %s", i+1, severity[i], cause[i])
		}
	}
	if len(cause) < 2 || cause[0] != "ICE in every AZ while another region has capacity (us-east-1)" || cause[1] != "ICE: instance type exhausted in every AZ (us-east-1)" {
		t.Fatalf("top rows %v, want the cross-region ICE finding of us-east-1, then its own", cause)
	}
	t.Logf("%d rows; notices %v", len(cause), fr.Meta.Notices)
}

// TestScopeInOneRegionOnly: an endpoint that exists in one of the regions is diagnosed
// there; the other region is one row saying where the endpoint is not and what it has, and
// only when no region has it is the query an error (the first region's, as the user's).
func TestScopeInOneRegionOnly(t *testing.T) {
	withEndpoint := func(ep string) Querier {
		d := newData(t)
		d.float(lbls(semconv.NodeMemTotal, engLabels(ep, "", "i-"+ep, "az-1")...), constant(1e9))
		d.float(lbls(semconv.VLLMKVCacheUsage, engLabels(ep, "", "i-"+ep, "az-1")...), constant(0.97))
		d.float(lbls(semconv.VLLMWaiting, engLabels(ep, "", "i-"+ep, "az-1")...), constant(5))
		return d.querier()
	}
	regions := []Region{{Name: "us-east-1", Querier: withEndpoint("chat")}, {Name: "us-west-2", Querier: withEndpoint("embed")}}
	r, err := RunRegions(context.Background(), regions, Scope{Endpoint: "chat"}, t0, tEnd(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) == 0 || r.Findings[0].Region != "us-east-1" || r.Findings[0].Target.Endpoint != "chat" {
		t.Fatalf("want chat's findings in us-east-1, got%s", describe(r.Findings))
	}
	if len(r.Failures) != 1 || r.Failures[0].Region != "us-west-2" || r.Failures[0].Rule != "" ||
		!strings.Contains(r.Failures[0].Error, `endpoint "chat" has no data`) || !strings.Contains(r.Failures[0].Error, "endpoints with data: embed") {
		t.Fatalf("failures %+v, want one row for us-west-2 naming what it has", r.Failures)
	}
	_, err = RunRegions(context.Background(), regions, Scope{Endpoint: "chta"}, t0, tEnd(), DefaultConfig())
	if err == nil || !strings.HasPrefix(err.Error(), `region us-east-1: diagnosis: endpoint "chta" has no data`) {
		t.Fatalf("error %v, want the first region's", err)
	}
}
