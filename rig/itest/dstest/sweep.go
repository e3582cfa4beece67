package dstest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// LongEnv runs the long sweeps in full (scorecards, time-to-name over every fleet shape).
// Without it a sweep runs a rotating sample, so scripts/test.sh (and CI) stays well under
// 15 minutes on a busy 2-core machine while every case still runs within a few days.
const LongEnv = "INFERSCOPE_LONG"

// SampleEnv pins the sample a sweep runs (the number a failing run logged), to repeat it.
const SampleEnv = "INFERSCOPE_SAMPLE"

// Sweep says which part of a long sweep this run covers.
type Sweep struct {
	Full   bool // every case (INFERSCOPE_LONG=1)
	Sample int  // else: the rotation, by default the UTC day number
}

// NewSweep reads the sweep's environment and logs what runs and how to repeat it. A
// malformed value fails the test rather than silently running another sample.
func NewSweep(t testing.TB) Sweep {
	t.Helper()
	if v := os.Getenv(LongEnv); v != "" && v != "0" {
		if v != "1" {
			t.Fatalf("%s=%q: set it to 1 for the full sweep, or leave it unset for the sample", LongEnv, v)
		}
		t.Logf("full sweep (%s=1)", LongEnv)
		return Sweep{Full: true}
	}
	s := Sweep{Sample: int(time.Now().UTC().Unix() / 86400)}
	if v := os.Getenv(SampleEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want a sample number ≥ 0 (as a run logs it)", SampleEnv, v)
		}
		s.Sample = n
	}
	t.Logf("sample %d of the sweep (%s=%d repeats it, %s=1 runs every case)", s.Sample, SampleEnv, s.Sample, LongEnv)
	return s
}

// Takes says whether case k of a sweep runs: every case in full, else every stride-th
// case, starting where the sample puts it, so stride consecutive samples cover them all.
func (s Sweep) Takes(k, stride int) bool {
	return s.Full || stride <= 1 || k%stride == s.Sample%stride
}
