package models

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// readJSON decodes a file of the repository (this package is pkg/models).
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestPluginIDMatchesPluginJSON(t *testing.T) {
	var plugin struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	readJSON(t, "plugin.json", &plugin)
	if plugin.ID != PluginID || plugin.Type != "datasource" {
		t.Fatalf("plugin.json id %q (type %q), Go's PluginID %q: change both", plugin.ID, plugin.Type, PluginID)
	}
}

// TestQueryTypesMatchFrontend: the frontend's table of query types (src/queryTypes.json) and
// the types the backend routes are the same set, and only the PromQL one runs PromQL.
func TestQueryTypesMatchFrontend(t *testing.T) {
	var table map[string]struct {
		RunsPromQL bool `json:"runsPromQL"`
	}
	readJSON(t, "src/queryTypes.json", &table)
	backend := QueryTypes
	if got := slices.Sorted(maps.Keys(table)); !slices.Equal(got, slices.Sorted(slices.Values(backend))) {
		t.Fatalf("src/queryTypes.json has %v, the backend routes %v: change both", got, backend)
	}
	for _, qt := range backend {
		q := Query{QueryType: qt}
		if table[qt].RunsPromQL != q.IsPromQL() {
			t.Errorf("%s: frontend runsPromQL=%v, backend IsPromQL=%v", qt, table[qt].RunsPromQL, q.IsPromQL())
		}
	}
}
