package semconv

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFrontendCatalogFresh: the query builder reads src/semconv.json; it must be what the Go
// catalog writes today.
func TestFrontendCatalogFresh(t *testing.T) {
	want, err := CatalogJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "src", "semconv.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("src/semconv.json is stale: run go generate ./pkg/semconv")
	}
}

func TestCatalogConsistent(t *testing.T) {
	seen := map[string]bool{}
	families := map[Family]bool{}
	for _, f := range Families {
		families[f.ID] = true
	}
	for _, x := range Catalog() {
		if seen[x.Name] {
			t.Errorf("%s listed twice", x.Name)
		}
		seen[x.Name] = true
		if !families[x.Family] {
			t.Errorf("%s: unknown family %q", x.Name, x.Family)
		}
		if !slices.Contains([]string{TypeGauge, TypeCounter, TypeHistogram}, x.Type) || x.Unit == "" {
			t.Errorf("%s: type %q unit %q", x.Name, x.Type, x.Unit)
		}
		// The delta ones are exactly the vended ones, so rate() is refused on exactly those.
		if (x.Temporality == TemporalityDelta) != IsVended(x.Name) {
			t.Errorf("%s: temporality %q but IsVended=%v", x.Name, x.Temporality, IsVended(x.Name))
		}
	}
	for _, n := range []string{Invocations, ModelLatencyForICByInstanceID, VLLMTTFT, DCGMGPUUtil, ICECount} {
		if _, ok := Lookup(n); !ok {
			t.Errorf("%s missing from the catalog", n)
		}
	}
	if x, _ := Lookup(ModelLatency); x.Type != TypeHistogram || x.Temporality != TemporalityDelta || x.Unit != "µs" {
		t.Errorf("ModelLatency: %+v", x)
	}
	if IsVended(VLLMPromptTokens) || !IsVended(ConcurrentRequestsPerCopy) {
		t.Error("IsVended disagrees with the catalog")
	}
}
