package semconv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
)

// TestFrontendCatalogFresh: the query builder reads src/semconv.json; it must be what the Go
// catalog writes today.
func TestFrontendCatalogFresh(t *testing.T) {
	goldentest.CheckGenerated(t, "src/semconv.json", CatalogJSON, "go generate ./pkg/semconv")
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

// TestEveryMetricConstantCatalogued: a metric name added to this package without a catalog
// line would reach the builder with no type or temporality (and, if vended, not be delta).
func TestEveryMetricConstantCatalogued(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "semconv.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Constants that are not metric names: labels, label values, dimensions and settings.
	notMetric := regexp.MustCompile(`^(Label|Dim|Framework|Scale|Type|Temporality|Operation|Scope|EnrichmentSwitch|CPUMode|Throttle)`)
	checked := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, name := range v.Names {
				lit, ok := v.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || notMetric.MatchString(name.Name) {
					continue
				}
				value, _ := strconv.Unquote(lit.Value)
				checked++
				if _, ok := Lookup(value); !ok {
					t.Errorf("%s (%q) is not in the catalog (catalog.go): add its family, type and unit", name.Name, value)
				}
			}
		}
	}
	if checked < len(catalog) {
		t.Fatalf("checked %d constants, the catalog has %d entries: the filter skips metric names", checked, len(catalog))
	}
}

// TestEveryVendedVariantCatalogued: SageMaker publishes each classic metric under one name per
// grouping (metrics catalog §3.5, "Metric name mapping"); a variant missing here is unknown
// to the builder, which then offers rate() on a delta metric.
func TestEveryVendedVariantCatalogued(t *testing.T) {
	var names []string
	variants := func(suffixes []string, bases ...string) {
		for _, b := range bases {
			for _, s := range suffixes {
				names = append(names, b+s)
			}
		}
	}
	variants([]string{"", "ByInstanceId", "ByAzByInstanceType", "ForIc", "ForIcByAzByInstanceType", "ForIcByInstanceIdByContainerId"},
		"Invocations", "Invocation4XXErrors", "Invocation5XXErrors", "InvocationModelErrors", "ModelLatency", "OverheadLatency")
	variants([]string{"", "ByAzByInstanceType"}, "InvocationsPerCopy", "ConcurrentRequestsPerCopy", "ConcurrentRequestsPerModel",
		"FirstChunkLatency", "FirstChunkModelLatency", "FirstChunkOverheadLatency")
	variants([]string{"", "ByInstanceId", "ByAzByInstanceType"}, "InvocationsPerInstance")
	variants([]string{""}, "MidStreamErrors")
	for _, n := range names {
		x, ok := Lookup(n)
		if !ok || !IsVended(n) {
			t.Errorf("%s: in the catalog %v, vended %v", n, ok, IsVended(n))
			continue
		}
		latency := regexp.MustCompile(`Latency`).MatchString(n)
		if latency != (x.Type == TypeHistogram) {
			t.Errorf("%s: type %s", n, x.Type)
		}
	}
}
