package diagnosis

import (
	"fmt"
	"strings"
)

// Fallback instance types for an ICE finding: SageMaker types with the same number of GPUs
// per instance and at least the GPU memory, the usual heterogeneous-pool choices. Families
// whose sizes carry the same GPUs share a size; the P types are listed whole.
var (
	fallbackFamilies = map[string][]string{
		"g5":   {"g6e", "g6"}, // A10G 24 GB → L40S 48 GB, L4 24 GB
		"g6":   {"g6e", "g5"}, // L4 24 GB → L40S 48 GB, A10G 24 GB
		"g4dn": {"g5", "g6"},  // T4 16 GB → A10G, L4
	}
	fallbackTypes = map[string][]string{
		"ml.p4d.24xlarge":  {"ml.p4de.24xlarge", "ml.p5.48xlarge"}, // 8 × A100 40 GB → 8 × A100 80 GB, 8 × H100 80 GB
		"ml.p4de.24xlarge": {"ml.p5.48xlarge"},
		"ml.p5.48xlarge":   {"ml.p5e.48xlarge", "ml.p5en.48xlarge"}, // 8 × H100 → 8 × H200
		"ml.g6e.12xlarge":  {"ml.g6e.24xlarge"},                     // 4 × L40S, more vCPUs and memory
	}
)

// fallbacks are the types to fall back to from instanceType, best first.
func fallbacks(instanceType string) []string {
	if out, ok := fallbackTypes[instanceType]; ok {
		return out
	}
	parts := strings.Split(instanceType, ".")
	if len(parts) != 3 || parts[0] != "ml" {
		return nil
	}
	var out []string
	for _, f := range fallbackFamilies[parts[1]] {
		out = append(out, "ml."+f+"."+parts[2])
	}
	return out
}

// fallbackPrices is the ICE finding's evidence of what falling back costs: each fallback
// type not itself met by ICE in the region, with its hourly price against the exhausted
// type's. Without prices it is empty; a missing price is said as such.
func (e *env) fallbackPrices(instanceType string, d *iceData) (ev []Evidence, next string) {
	if e.prices == nil {
		return nil, ""
	}
	from, fromErr := e.prices(instanceType)
	for _, fb := range fallbacks(instanceType) {
		if d.types[fb] != nil {
			continue // exhausted too
		}
		to, err := e.prices(fb)
		var v string
		switch {
		case err != nil:
			v = err.Error()
		case fromErr != nil:
			v = fmt.Sprintf("%s; %s", to.Describe(), fromErr)
		default:
			diff := to.USDPerHour - from.USDPerHour
			v = fmt.Sprintf("%s vs %s: %+.3f USD/h per instance (%+.0f %%)", to.Describe(), from.Describe(), diff, 100*diff/from.USDPerHour)
			if next == "" {
				next = fmt.Sprintf(" Falling back to %s costs %+.3f USD an hour per instance (%s vs %s).", fb, diff, to.Describe(), from.Describe())
			}
		}
		ev = append(ev, Evidence{What: "fallback " + fb, Value: v, Query: d.query})
	}
	return ev, next
}
