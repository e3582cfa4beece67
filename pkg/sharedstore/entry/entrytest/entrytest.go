// Package entrytest generates the cached extents the shared store's tests and benchmarks
// encode: seeded, so every run sees the same data.
package entrytest

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// Extent is a seeded panel's answer: instances × 8 GPUs, steps of one minute,
// with the value shapes CloudWatch returns (utilization with two decimals, whole counts,
// constants, stale NaN) and gaps where an instance published nothing.
func Extent(seed uint64, instances, steps int) entry.Extent {
	r := rand.New(rand.NewPCG(seed, 7)) // #nosec G404 -- seeded test data, not a secret
	const step = 60_000
	start := int64(1_790_000_000_000) / step * step
	e := entry.Extent{Start: start, End: start + int64(steps-1)*step, Step: step, FetchedAt: start + int64(steps)*step + 1234, Settled: start + int64(steps-3)*step}
	for i := range instances {
		id := "i-0" + strconv.FormatUint(r.Uint64()>>12, 16)
		for gpu := range 8 {
			s := entry.Series{Labels: []entry.Label{{Name: "__name__", Value: "gpu_utilization"}, {Name: "gpu", Value: strconv.Itoa(gpu)}, {Name: "instance_id", Value: id}, {Name: "region", Value: "us-east-1"}}}
			v := r.Float64() * 100
			shape := (i + gpu) % 4
			for k := range steps {
				if r.IntN(50) == 0 {
					continue // a missing point
				}
				switch shape {
				case 0: // utilization, two decimals
					v = math.Round(math.Min(100, math.Max(0, v+r.NormFloat64()*3))*100) / 100
				case 1: // a whole count
					v = math.Floor(v) + float64(r.IntN(3))
				case 2: // constant
				case 3:
					v = r.Float64() * 1e9
					if r.IntN(20) == 0 {
						v = math.Float64frombits(0x7ff0000000000002) // Prometheus' stale marker
					}
				}
				s.T = append(s.T, e.Start+int64(k)*step)
				s.V = append(s.V, v)
			}
			e.Series = append(e.Series, s)
		}
	}
	// Annotations on some seeds, one of them also a label value (one string table).
	switch seed % 3 {
	case 1:
		e.Infos = []string{`PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "gpu_utilization"`}
	case 2:
		e.Warnings = []string{"us-east-1", "the answer was cut at 500 series"}
		e.Infos = []string{"us-east-1"}
	}
	return e
}

// Same checks that got is want, comparing values by their bits, so NaN (and the stale marker) must survive.
func Same(t testing.TB, want, got entry.Extent) {
	t.Helper()
	require.Equal(t, len(want.Series), len(got.Series))
	wantBits, gotBits := want, got
	wantBits.Series, gotBits.Series = nil, nil
	assert.Equal(t, wantBits, gotBits)
	for i := range want.Series {
		w, g := want.Series[i], got.Series[i]
		assert.Equal(t, w.Labels, g.Labels)
		assert.Equal(t, w.T, g.T)
		require.Len(t, g.V, len(w.V))
		for j := range w.V {
			require.Equal(t, math.Float64bits(w.V[j]), math.Float64bits(g.V[j]), "series %d value %d", i, j)
		}
	}
}
