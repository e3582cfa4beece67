package alerts_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// A healthy 200-instance fleet whose copies scale in and out all the time must leave every
// rule Normal: not one Pending evaluation, since each is an entry in Grafana's alert list and
// state history. A copy joining or leaving a host used to hold "GPU memory growing toward
// full" for a minute on about three hosts every 15 minutes.

// churnSeeds: each draws the fleet's traffic; INFERSCOPE_LONG=1 (CI) sweeps 2 hours of each.
var churnSeeds = []uint64{5}

const (
	churnSpan      = 2 * time.Hour
	churnSpanShort = 30 * time.Minute
	// churnLookback: the history before the sweep, for the rules' hour windows and offsets.
	churnLookback = 75 * time.Minute
)

// churningFleet is fleet.Large's 200 instances of 8 GPUs with each IC's daily peak drawn from
// r, so at any hour some ICs climb (scale-outs) and others fall (scale-ins). Large's bursts
// stay as they are: a burst that doubles an IC's load per copy while it stays under the
// policy's target is healthy, but "Autoscaling not firing" cannot tell it from a policy that
// does not act, as it reads no target (issue 32, item 7).
func churningFleet(r *rand.Rand) *fleet.Fleet {
	f := fleet.Large(200, 8)
	for i := range f.Endpoints {
		for j := range f.Endpoints[i].InferenceComponents {
			f.Endpoints[i].InferenceComponents[j].Traffic.PeakHourUTC = r.IntN(24)
		}
	}
	return f
}

func TestHealthyChurningFleetStaysNormal(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: backfills a 200-instance fleet")
	}
	t.Parallel()
	span := churnSpanShort
	if dstest.NewSweep(t).Full { // INFERSCOPE_LONG=1, read and checked where the other sweeps read it
		span = churnSpan
	}
	rules := loadRules(t)
	for _, seed := range churnSeeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			f := churningFleet(rand.New(rand.NewPCG(seed, 0xc4a2)))
			st, ds := startPlugin(t, stack.Options{Scenario: "healthy", Seed: int64(seed), History: span + churnLookback, End: stack.PinnedEnd, Fleet: f}, nil)
			ctx := context.Background()
			// The churn the sweep covers: the hosts with a GPU series (one holder of one GPU)
			// that came or went within it, i.e. with fewer samples than its minutes.
			mins := int(span / time.Minute)
			moved, err := queryRule(ctx, ds, rule{Query: fmt.Sprintf(`count(count by ("@resource.host.id") (count_over_time(DCGM_FI_DEV_FB_FREE[%dm]) < %d))`, mins, mins), Window: time.Minute}, st.End)
			if err != nil {
				t.Fatalf("counting hosts whose copies moved: %v", err)
			}
			hosts := 0.0
			if len(moved) == 1 {
				hosts = moved[0].values[len(moved[0].values)-1]
			}
			t.Logf("seed %d: 200 instances, %.0f of them saw a copy join or leave within the %s swept", seed, hosts, span)
			// At least the field report's churn: three hosts every 15 minutes.
			if want := 3 * float64(span/(15*time.Minute)); hosts < want {
				t.Fatalf("only %.0f hosts saw copies join or leave within %s, want %.0f or more: the fleet does not churn, so the test would prove nothing", hosts, span, want)
			}
			states := sweep(t, ds, rules, st.End.Add(-span), st.End, time.Minute)
			checkFinite(t, states, fmt.Sprintf("the churning fleet (seed %d)", seed))
			for _, s := range states {
				for _, in := range s.instances {
					if len(in.trueAt) > 0 {
						t.Errorf("%s held on the healthy churning fleet (seed %d) on %s at %d evaluation(s), first %s (value %.3g)",
							s.r.UID, seed, resourceName(in.labels), len(in.trueAt), in.trueAt[0].Format("15:04"), in.lastVal)
					}
				}
			}
		})
	}
}
