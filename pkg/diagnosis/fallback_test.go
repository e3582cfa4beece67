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
