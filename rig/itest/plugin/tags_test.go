package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// On tagged generated fleets, through the plugin's resource routes as the Filters variable
// and the tag filter use them: the tag keys and values are offered, each Team resolves (the
// frontend's one lookup: EndpointName of Invocations with the tag's matcher) to the
// endpoints the fleet file tags, and a GPU panel narrowed by those endpoints shows exactly
// them, none emptied.
func TestTagFilterResolvesToTheFleetFilesEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: backfills simulated fleets and serves the emulator")
	}
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			base, err := fleet.Generate(rand.New(rand.NewPCG(seed, 5)), 10)
			if err != nil {
				t.Fatal(err)
			}
			f, err := fleet.WithTags(base, rand.New(rand.NewPCG(seed, 35)))
			if err != nil {
				t.Fatal(err)
			}
			st, err := stack.Start(context.Background(), stack.Options{Scenario: "healthy", Fleet: f, History: 30 * time.Minute, End: stack.PinnedEnd})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			jsonData, secure := st.DataSourceSettings()
			d := dstest.New(t, "stack", jsonData, secure)
			window := fmt.Sprintf("start=%d&end=%d", st.End.Add(-30*time.Minute).Unix(), st.End.Unix())

			// Every tag of the fleet file, endpoint or IC, by key.
			values := map[string]map[string]bool{}
			teams := map[string][]string{} // Team value → endpoints tagged with it
			for _, e := range f.Endpoints {
				for _, tags := range append([]map[string]string{e.Tags}, icTagMaps(e)...) {
					for k, v := range tags {
						if values[k] == nil {
							values[k] = map[string]bool{}
						}
						values[k][v] = true
					}
				}
				if v, ok := e.Tags[fleet.TeamKey]; ok {
					teams[v] = append(teams[v], e.Name)
				}
			}
			if len(teams) == 0 {
				t.Fatal("the generated fleet tags no endpoint with Team: the case exercises nothing")
			}

			t.Logf("%d endpoints, %d tag keys, Team values %v", len(f.Endpoints), len(values), teams)
			names := stringData(t, callResource(t, d, http.MethodGet, "api/v1/labels?limit=10000&"+window, ""))
			for k, vs := range values {
				label := semconv.LabelTagPrefix + k
				if !slices.Contains(names, label) {
					t.Errorf("labels lack %q: %v", label, names)
					continue
				}
				got := stringData(t, callResource(t, d, http.MethodGet, "api/v1/label/"+url.PathEscape(label)+"/values?"+window, ""))
				if want := slices.Sorted(maps.Keys(vs)); !slices.Equal(sorted(got), want) {
					t.Errorf("values of %q: %q, the fleet file has %q", label, got, want)
				}
			}

			for team, want := range teams {
				match := fmt.Sprintf(`Invocations{%s=%s}`, strconv.Quote(semconv.LabelTagPrefix+fleet.TeamKey), strconv.Quote(team))
				got := stringData(t, callResource(t, d, http.MethodGet, "api/v1/label/EndpointName/values?"+window+"&match%5B%5D="+url.QueryEscape(match), ""))
				if !slices.Equal(sorted(got), sorted(want)) {
					t.Errorf("Team %q resolves to %v, the fleet file tags %v", team, got, want)
				}
				quoted := make([]string, len(got))
				for i, e := range got {
					quoted[i] = regexp.QuoteMeta(e)
				}
				expr := fmt.Sprintf(`count by (%q) (DCGM_FI_DEV_GPU_UTIL{%q=~%s})`, semconv.LabelEndpoint, semconv.LabelEndpoint, strconv.Quote(strings.Join(quoted, "|")))
				if shown := panelEndpoints(t, d, st, expr); !slices.Equal(shown, sorted(want)) {
					t.Errorf("Team %q: the GPU panel shows endpoints %v, the fleet file tags %v", team, shown, want)
				}
			}
		})
	}
}

func icTagMaps(e fleet.Endpoint) []map[string]string {
	out := make([]map[string]string, len(e.InferenceComponents))
	for i, ic := range e.InferenceComponents {
		out[i] = ic.Tags
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// panelEndpoints runs expr as a panel does over the last 10 minutes and returns the
// endpoints of its series, sorted.
func panelEndpoints(t *testing.T, d *plugin.Datasource, st *stack.Stack, expr string) []string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"expr": expr, "range": true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", JSON: body, TimeRange: backend.TimeRange{From: st.End.Add(-10 * time.Minute), To: st.End},
		Interval: time.Minute, MaxDataPoints: 100,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["A"]
	if dr.Error != nil {
		t.Fatalf("%s: %v", expr, dr.Error)
	}
	var out []string
	for _, fr := range dr.Frames {
		for _, fd := range fr.Fields {
			if e, ok := fd.Labels[semconv.LabelEndpoint]; ok {
				out = append(out, e)
			}
		}
	}
	return sorted(out)
}
