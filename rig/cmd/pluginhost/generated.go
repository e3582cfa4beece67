package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// Generated instances stand for a fleet far larger than the simulated one, so the browser
// tests see a label with thousands of values (the metrics browser's large label sets).
const (
	generatedMetric   = "pluginhost_generated_instance_load"
	generatedEndpoint = "generated-large-fleet"
	generatedSteps    = 60 // one hour of samples at the stack's step, ending at its history end
)

// generatedHosts is n distinct instance ids shaped like EC2's (i-0 and 16 hex digits) from the seed.
func generatedHosts(n int, seed int64) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(n))) // #nosec G115 G404 -- test data reproducible from a seed: bits reinterpreted, not a secret
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	for len(out) < n {
		id := fmt.Sprintf("i-0%016x", rng.Uint64())
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// appendGenerated writes one gauge series per generated instance into the stack's store:
// the fleet's account and region labels, one sample per step over the last hour.
func appendGenerated(ctx context.Context, st *stack.Stack, app storage.Appendable, n int, seed int64) error {
	hosts := generatedHosts(n, seed)
	a := app.Appender(ctx)
	refs := make([]storage.SeriesRef, n)
	for step := generatedSteps - 1; step >= 0; step-- {
		t := st.End.Add(-time.Duration(step) * st.Step).UnixMilli()
		for i, h := range hosts {
			ls := labels.FromStrings(labels.MetricName, generatedMetric, sc.LabelType, sc.TypeGauge,
				sc.LabelHostID, h, sc.LabelEndpoint, generatedEndpoint, sc.LabelAccount, st.Fleet.Account, sc.LabelRegion, st.Region)
			ref, err := a.Append(refs[i], ls, t, float64((i+step)%100))
			if err != nil {
				_ = a.Rollback()
				return fmt.Errorf("generated instances: %w", err)
			}
			refs[i] = ref
		}
	}
	return a.Commit()
}
