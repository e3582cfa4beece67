package diagnosis

import (
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
)

func TestFallbacks(t *testing.T) {
	for _, tc := range []struct {
		from string
		want []string
	}{
		{"ml.g5.12xlarge", []string{"ml.g6e.12xlarge", "ml.g6.12xlarge"}},
		{"ml.g4dn.xlarge", []string{"ml.g5.xlarge", "ml.g6.xlarge"}},
		{"ml.p4d.24xlarge", []string{"ml.p4de.24xlarge", "ml.p5.48xlarge"}},
		{"ml.c5.xlarge", nil}, // no GPUs: nothing to fall back to
		{"g5.12xlarge", nil},
		{"", nil},
	} {
		if got := fallbacks(tc.from); !slices.Equal(got, tc.want) {
			t.Errorf("fallbacks(%q) = %v, want %v", tc.from, got, tc.want)
		}
	}
}

// gpusPerInstance are SageMaker's GPU instance types' GPUs (AWS's instance type pages).
var gpusPerInstance = func() map[string]int {
	m := map[string]int{"ml.p4d.24xlarge": 8, "ml.p4de.24xlarge": 8, "ml.p5.48xlarge": 8, "ml.p5e.48xlarge": 8, "ml.p5en.48xlarge": 8}
	for _, family := range []string{"g4dn", "g5", "g6", "g6e"} {
		for size, n := range map[string]int{"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4, "48xlarge": 8} {
			if family == "g4dn" && (size == "24xlarge" || size == "48xlarge") {
				continue // no such g4dn sizes
			}
			m["ml."+family+"."+size] = n
		}
	}
	return m
}()

// TestFallbacksKeepTheGPUs: every fallback of every GPU type has the GPUs per instance of
// the type it replaces (a copy placed for 4 GPUs fits 4, and the price compares like for
// like), as docs/cost.md says.
func TestFallbacksKeepTheGPUs(t *testing.T) {
	for typ, n := range gpusPerInstance {
		for _, fb := range fallbacks(typ) {
			if m, ok := gpusPerInstance[fb]; !ok {
				t.Errorf("%s falls back to %s, whose GPUs this test does not know: add it to gpusPerInstance", typ, fb)
			} else if m != n {
				t.Errorf("%s (%d GPUs) falls back to %s (%d GPUs)", typ, n, fb, m)
			}
		}
	}
}

// TestFallbackPrices: each fallback not itself exhausted is priced against the exhausted
// type (by hand: $13.117 − $7.09 = +$6.027 an hour, +85 %); one without a price is the
// gap; without prices there is no evidence.
func TestFallbackPrices(t *testing.T) {
	b := pricing.NewBook([]pricing.Price{{InstanceType: "ml.g5.12xlarge", USDPerHour: 7.09}, {InstanceType: "ml.g6e.12xlarge", USDPerHour: 13.117}})
	e := &env{prices: func(typ string) (pricing.Price, error) { return b.Lookup("us-east-1", typ) }}
	exhausted := &iceData{query: "ice", types: map[string]*iceType{"ml.g5.12xlarge": {}}}
	ev, next := e.fallbackPrices("ml.g5.12xlarge", exhausted)
	if len(ev) != 2 || ev[0].What != "fallback ml.g6e.12xlarge" || ev[1].What != "fallback ml.g6.12xlarge" {
		t.Fatalf("evidence %+v, want both fallbacks, best first", ev)
	}
	if !strings.Contains(ev[0].Value, "+6.027 USD/h per instance (+85 %)") || ev[0].Query != "ice" {
		t.Errorf("ml.g6e.12xlarge: %+v", ev[0])
	}
	if !strings.HasPrefix(ev[1].Value, "no price for ml.g6.12xlarge in us-east-1") {
		t.Errorf("unpriced ml.g6.12xlarge: %q, want the gap", ev[1].Value)
	}
	if !strings.Contains(next, "Falling back to ml.g6e.12xlarge costs +6.027 USD an hour per instance") {
		t.Errorf("next step %q", next)
	}

	exhausted.types["ml.g6e.12xlarge"] = &iceType{}
	if ev, next := e.fallbackPrices("ml.g5.12xlarge", exhausted); len(ev) != 1 || ev[0].What != "fallback ml.g6.12xlarge" || next != "" {
		t.Errorf("with ml.g6e.12xlarge exhausted too: %+v %q, want only the unpriced ml.g6.12xlarge", ev, next)
	}
	if ev, next := (&env{}).fallbackPrices("ml.g5.12xlarge", exhausted); ev != nil || next != "" {
		t.Errorf("without prices: %+v %q", ev, next)
	}
}
