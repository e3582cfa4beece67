package simulator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// shift is the ratio of a per-IC mean over the incident's last 60 minutes to the same
// mean over the hour before the change, for every IC: ITL and TTFT from the engine's
// histograms.
func shift(t *testing.T, scenario, metric string) map[string]float64 {
	t.Helper()
	db := backfilled(t, scenario, 3)
	mean := func(offset string) map[string]float64 {
		return query(t, db, fmt.Sprintf(`histogram_avg(sum by ("%s") (rate({"%s"}[60m]%s)))`, semconv.LabelInferenceComp, metric, offset), semconv.LabelInferenceComp)
	}
	// The incident starts 90 minutes before the end, the deployment 2 minutes earlier:
	// [end-60m, end] is all incident, [end-155m, end-95m] all before it.
	after, before := mean(""), mean(" offset 95m")
	out := map[string]float64{}
	for name, v := range after {
		if b := before[name]; name != "" && b > 0 {
			out[name] = v / b
		}
	}
	if len(out) < 2 {
		t.Fatalf("%s: %s on %d ICs, want several to compare: %v / %v", scenario, metric, len(out), after, before)
	}
	return out
}

func TestBadDeploySlowsTheChangedICOnly(t *testing.T) {
	sim, err := New(fleet.Default(), "bad-deploy", 42)
	if err != nil {
		t.Fatal(err)
	}
	target := sim.Incident().Name
	// Decoding 2.5× slower: ITL follows, TTFT (queue + prefill + one step) less so.
	for metric, least := range map[string]float64{semconv.VLLMITL: 2, semconv.VLLMTTFT: 1.2} {
		ratios := shift(t, "bad-deploy", metric)
		t.Logf("%s after/before by IC: %v", metric, ratios)
		for name, r := range ratios {
			switch {
			case name == target && r < least:
				t.Errorf("%s on the deployed IC %s rose only ×%.2f", metric, name, r)
			case name != target && (r > 1.25 || r < 0.8):
				t.Errorf("%s on %s, which nothing changed, moved ×%.2f", metric, name, r)
			}
		}
		if _, ok := ratios[target]; !ok {
			t.Errorf("%s has no series for the deployed IC %s", metric, target)
		}
	}
}

func TestScenarioChangesPrecedeTheirIncident(t *testing.T) {
	for _, tc := range []struct {
		scenario, event string
		// onTarget: the change is to the incident's resource (or its endpoint); benign-deploy's
		// is elsewhere.
		onTarget bool
	}{
		{"bad-deploy", "UpdateInferenceComponent", true},
		{"bad-config", "UpdateEndpoint", true},
		{"benign-deploy", "UpdateEndpoint", false}, // the default fleet's only other endpoint has no IC
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			sim, err := New(fleet.Default(), tc.scenario, 42)
			if err != nil {
				t.Fatal(err)
			}
			if got := sim.Changes(); got != nil {
				t.Fatalf("changes before the first backfill: %+v", got)
			}
			backfillSim(t, sim, 3)
			in := sim.Incident()
			var last *Change
			changes := sim.Changes()
			for i, c := range changes {
				if c.Event == tc.event {
					last = &changes[i]
				}
				if c.Time.After(testNow) || c.ID == "" || !strings.HasPrefix(c.Who, "arn:aws:sts::") {
					t.Errorf("change %+v: after the history's end, without an id or an ARN", c)
				}
			}
			if last == nil {
				t.Fatalf("no %s in %+v", tc.event, changes)
			}
			lead := in.Start.Sub(last.Time)
			if lead <= 0 || lead > 10*time.Minute {
				t.Errorf("the %s at %s is %v before the incident's start %s, want within 10 minutes before it", tc.event, last.Time, lead, in.Start)
			}
			related := last.Endpoint == in.Endpoint && (last.IC == "" || last.IC == in.Name)
			if related != tc.onTarget {
				t.Errorf("change on %s/%s, incident on %s %s of %s: related %v, want %v", last.Endpoint, last.IC, in.Level, in.Name, in.Endpoint, related, tc.onTarget)
			}
		})
	}
}

func TestBadConfigFailsAShareOfTheEndpointsRequests(t *testing.T) {
	db := backfilled(t, "bad-config", 3)
	share := func(offset string) map[string]float64 {
		return query(t, db, fmt.Sprintf(`sum by ("%[1]s") (sum_over_time(%[2]s[60m]%[4]s)) / sum by ("%[1]s") (sum_over_time(%[3]s[60m]%[4]s))`,
			semconv.DimEndpointName, semconv.Invocation5XXErrors, semconv.Invocations, offset), semconv.DimEndpointName)
	}
	sim, _ := New(fleet.Default(), "bad-config", 42)
	target := sim.Incident().Name
	after, before := share(""), share(" offset 95m")
	for ep, s := range after {
		switch {
		case ep == target && (s < 0.2 || s > 0.4):
			t.Errorf("5XX share on %s after its config change: %.3f, want about 0.3", ep, s)
		case ep != target && s > 0.01:
			t.Errorf("5XX share on %s, which nothing changed: %.3f", ep, s)
		}
		if before[ep] > 0.01 {
			t.Errorf("5XX share on %s before the change: %.3f", ep, before[ep])
		}
	}
	if _, ok := after[target]; !ok || target == "" {
		t.Fatalf("no 5XX share for the changed endpoint %q: %v", target, after)
	}
}
