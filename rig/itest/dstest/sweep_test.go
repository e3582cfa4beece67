package dstest

import "testing"

// Consecutive samples together take every case exactly once per stride; the full sweep all.
func TestSweepTakesEveryCaseOnceOverStrideSamples(t *testing.T) {
	for _, stride := range []int{1, 2, 3, 5} {
		taken := make([]int, 31)
		for sample := 100; sample < 100+stride; sample++ {
			for k := range taken {
				if (Sweep{Sample: sample}).Takes(k, stride) {
					taken[k]++
				}
			}
		}
		for k, n := range taken {
			if n != 1 {
				t.Errorf("stride %d: case %d taken %d times over %d samples, want once", stride, k, n, stride)
			}
			if !(Sweep{Full: true}).Takes(k, stride) {
				t.Errorf("stride %d: the full sweep leaves out case %d", stride, k)
			}
		}
	}
}

func TestNewSweepReadsTheEnvironment(t *testing.T) {
	t.Setenv(LongEnv, "")
	t.Setenv(SampleEnv, "17")
	if s := NewSweep(t); s.Full || s.Sample != 17 {
		t.Errorf("%s=17: got %+v, want sample 17", SampleEnv, s)
	}
	t.Setenv(LongEnv, "1")
	if s := NewSweep(t); !s.Full {
		t.Errorf("%s=1: got %+v, want the full sweep", LongEnv, s)
	}
}
