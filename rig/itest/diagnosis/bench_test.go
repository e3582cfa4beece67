package diagnosis_test

import (
	"context"
	"testing"
	"time"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// largeHist is the benchmark's history and diagnosed range.
const largeHist = 6 * time.Hour

// largeFleet serves 200 instances of 4 GPUs with 6 h of one-minute history through the
// emulator on loopback; the backfill is setup, not what is measured.
func largeFleet(b *testing.B) Querier {
	return startStackAt(b, fleet.Large(200, 4), "kv-saturation", int(largeHist/time.Hour), scenarioNow)
}

// BenchmarkDiagnosis measures a full diagnosis of the 200-instance fleet over 6 h against
// the emulator (wall time per op, upstream requests per op), next to a single-rule run in
// the same process as the baseline. Targets: ≤ 5 s and ≤ 40 requests per full run.
func BenchmarkDiagnosis(b *testing.B) {
	q := largeFleet(b) // owned by the parent, so it outlives the sub-benchmarks
	for _, c := range []struct {
		name  string
		rules []string
	}{
		{"baseline-one-rule", []string{"kv-cache-saturation"}},
		{"full", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Rules = c.rules
			b.ResetTimer()
			requests, findings := 0, 0
			for b.Loop() {
				r, err := Run(context.Background(), q, Scope{}, scenarioNow.Add(-largeHist), scenarioNow, cfg)
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Failures) > 0 {
					b.Fatalf("rule %s failed: %s", r.Failures[0].Rule, r.Failures[0].Error)
				}
				requests, findings = r.Requests, len(r.Findings)
			}
			b.ReportMetric(float64(requests), "requests/op")
			b.ReportMetric(float64(findings), "findings/op")
		})
	}
}
