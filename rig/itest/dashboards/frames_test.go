package dashboards_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/rig/dashload"
)

var updateFrames = flag.Bool("update", false, "rewrite "+panelFramesPath)

// panelFramesPath holds, per stat and bar chart panel, the frames the plugin answers with; the
// frontend test src/dashboards.test.ts runs Grafana's own reduce, transformations and
// display processing over them.
const panelFramesPath = "../../../dashboards/testdata/panel-frames.json"

// TestPanelFrames records what every stat and bar chart panel gets through the plugin from the
// fleet (healthy, or the scenario that feeds the panel) with the default variables (all targets in one request, as a panel sends
// them), and fails when the recorded frames are stale.
func TestPanelFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	runs := newFleets(t, nil)
	out := map[string]*backend.QueryDataResponse{}
	for file, d := range dashload.Generated(t) {
		vars := dashload.DefaultVars(d)
		for _, p := range d.Panels {
			// The alarm tiles are one tile per row of the alarms frame: src/dashboards.test.ts
			// checks them on the contract's frame, TestIssue11Panels on the emulator's.
			if p.Type != "stat" && p.Type != "barchart" || slices.ContainsFunc(p.Targets, dashload.AWSTarget) {
				continue
			}
			key := fmt.Sprintf("%s/%d", strings.TrimSuffix(file, ".json"), p.ID)
			scenario := cmp.Or(fedBy[key], "healthy") // a panel empty when healthy is recorded where it has data
			f := runs.get(scenario)
			var qs []backend.DataQuery
			for _, tg := range p.Targets {
				raw, err := json.Marshal(dashload.InterpolateTarget(tg, vars))
				if err != nil {
					t.Fatal(err)
				}
				qs = append(qs, backend.DataQuery{RefID: tg["refId"].(string), JSON: raw, MaxDataPoints: f.points, Interval: f.interval,
					TimeRange: backend.TimeRange{From: f.from, To: f.to}})
			}
			resp, err := f.ds.QueryData(context.Background(), &backend.QueryDataRequest{
				PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "fleet"}}, Queries: qs})
			if err != nil {
				t.Fatal(err)
			}
			for ref, dr := range resp.Responses {
				if dr.Error != nil {
					t.Fatalf("%s/%d %s: %v", file, p.ID, ref, dr.Error)
				}
				// Series order is the upstream's, and the first frame carries the response's
				// metadata: sort, and drop what only describes the request (and how the
				// results cache served it, with its cost estimate), so the file changes only
				// with the data.
				for _, fr := range dr.Frames {
					if fr.Meta != nil {
						fr.Meta.ExecutedQueryString, fr.Meta.Custom, fr.Meta.Stats = "", nil, nil
					}
				}
				sort.SliceStable(dr.Frames, func(i, j int) bool {
					return fmt.Sprint(dr.Frames[i].Fields[len(dr.Frames[i].Fields)-1].Labels) < fmt.Sprint(dr.Frames[j].Fields[len(dr.Frames[j].Fields)-1].Labels)
				})
			}
			out[key] = resp
		}
	}
	got, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *updateFrames {
		if err := os.WriteFile(panelFramesPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(panelFramesPath)
	if err != nil || !bytes.Equal(have, got) {
		t.Fatalf("%s is stale (%v): run go -C rig test ./itest/dashboards -run TestPanelFrames -update, then npx jest src/dashboards.test.ts", panelFramesPath, err)
	}
}
