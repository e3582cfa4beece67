package plugin_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestInventoryShowsTheFleetFilesTags: on a tagged generated fleet (hostile keys and values),
// the inventory table's tags column is each resource's tags as the fleet file gives them
// (SageMaker ListTags through the emulator): an endpoint's on its variant rows, an IC's own
// on its row.
func TestInventoryShowsTheFleetFilesTags(t *testing.T) {
	base, err := fleet.Generate(rand.New(rand.NewPCG(2, 5)), 10)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.WithTags(base, rand.New(rand.NewPCG(2, 35)))
	if err != nil {
		t.Fatal(err)
	}
	st, err := stack.Start(context.Background(), stack.Options{Scenario: "healthy", Fleet: f, History: 10 * time.Minute, End: stack.PinnedEnd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	jsonData, secure := st.DataSourceSettings()
	d := dstest.New(t, "stack", jsonData, secure)
	want := map[[2]string]string{} // endpoint, IC ("" for the endpoint) → tags text
	for _, e := range f.Endpoints {
		want[[2]string{e.Name, ""}] = semconv.TagsText(e.Tags)
		for _, ic := range e.InferenceComponents {
			want[[2]string{e.Name, ic.Name}] = semconv.TagsText(ic.Tags)
		}
	}
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "inventory", JSON: []byte(`{"queryType":"inventory"}`), TimeRange: backend.TimeRange{From: st.End.Add(-time.Hour), To: st.End},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 {
		t.Fatalf("inventory: %v, %d frames", r.Error, len(r.Frames))
	}
	fr := r.Frames[0]
	tags, _ := fr.FieldByName("tags")
	ep, _ := fr.FieldByName("endpoint")
	ic, _ := fr.FieldByName("inference_component")
	if tags == nil {
		t.Fatal("no tags column on a tagged fleet")
	}
	seen, tagged := map[[2]string]bool{}, 0
	for i := range tags.Len() {
		k := [2]string{ep.At(i).(string), ic.At(i).(string)}
		seen[k] = true
		w, ok := want[k]
		if got := tags.At(i).(string); !ok || got != w {
			t.Errorf("%v: tags %q, the fleet file's %q", k, got, w)
		}
		if w != "" {
			tagged++
		}
	}
	if len(seen) != len(want) || tagged == 0 {
		t.Errorf("%d resources (%d tagged rows), the fleet file has %d", len(seen), tagged, len(want))
	}
}
