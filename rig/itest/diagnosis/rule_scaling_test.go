package diagnosis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// burst is b for n minutes from minute k, a outside them.
func burst(k, n int, a, b float64) func(int) float64 {
	return func(i int) float64 {
		if i >= k && i < k+n {
			return b
		}
		return a
	}
}

func TestScalingRule(t *testing.T) {
	cases := []struct {
		name    string
		load    func(int) float64
		waiting func(int) float64
		outs    map[int]float64 // minute -> e2e_duration (s)
		target  float64         // the policy's ConcurrentRequestsPerCopy target; 0: no policy read, infer from the load
		cause   string
		sev     Severity
	}{
		{"load triples, no scale-out", stepAt(100, 6, 20), stepAt(100, 0, 12), nil, 0, "did not fire", Warning},
		{"over a known target, no scale-out", constant(12), constant(0), nil, 8, "did not fire", Critical},
		{"overload answered quickly", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{103: 240}, 0, "", 0},
		{"overload of a known target answered late", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{140: 300}, 8, "Slow scaling", Warning},
		{"late answer without a known target is not judged", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{140: 300}, 0, "", 0},
		{"a slow scale-out on its own", constant(4), constant(0), map[int]float64{50: 1500}, 0, "Slow scaling", Warning},
		{"steady load", constant(12), constant(0), nil, 0, "", 0},
		// Far over the target, a burst still going on at the end is named within SustainFast
		// (the fast window); one that has ended without a scale-out is a burst.
		{"short burst over a known target, ended", burst(170, 5, 6, 20), burst(170, 5, 0, 12), nil, 8, "", 0},
		{"far over a known target for the fast window", stepAt(175, 6, 20), stepAt(175, 0, 12), nil, 8, "did not fire", Critical},
		{"scale-out before the overload does not count", stepAt(100, 6, 20), stepAt(100, 0, 12), map[int]float64{20: 200}, 8, "did not fire", Critical},
		{"20 minutes is a burst, not a failure to scale", stepAt(160, 6, 20), stepAt(160, 0, 12), nil, 0, "", 0},
		{"idle IC", constant(0), constant(0), nil, 0, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newData(t)
			d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), c.load)
			d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-other"), constant(30)) // another endpoint's IC
			d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "ic-a", "i-1", "az-1")...), constant(50))
			d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-b", "ic-other", "i-2", "az-1")...), constant(50))
			d.float(lbls(semconv.VLLMWaiting, engLabels("ep-a", "ic-a", "i-1", "az-1")...), c.waiting)
			if c.outs != nil {
				d.event(lbls(semconv.ScalingE2EDuration, semconv.LabelEndpoint, "ep-a", semconv.LabelInferenceComp, "ic-a", semconv.LabelScalingDirection, semconv.ScaleOut), c.outs)
			}
			var pol PolicySource
			if c.target > 0 {
				pol = policies(map[string]Policy{"ic-a": {Metric: concurrencyMetric, Target: c.target, Min: 1, Max: 4, Copies: 2}})
			}
			r := diagnoseRegion(t, Region{Querier: d.querier(), Policies: pol}, Scope{Endpoint: "ep-a"}, scalingOnly())
			if c.cause == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Cause, c.cause) || r.Findings[0].Severity != c.sev ||
				r.Findings[0].Target != (Target{Level: LevelIC, Name: "ic-a", Endpoint: "ep-a", InferenceComponent: "ic-a"}) {
				t.Fatalf("want %s %q on ic-a, got%s", c.sev, c.cause, describe(r.Findings))
			}
		})
	}
}

// concurrencyMetric is the predefined metric of IC target tracking on concurrency.
const concurrencyMetric = "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"

// policies is a read of the ICs of m (series without an account label, as in one account)
// made at the end of the data, so the copies are the range end's.
func policies(m map[string]Policy) PolicySource {
	p := &Policies{ICs: map[ICKey]Policy{}, CopiesAt: tEnd()}
	for ic, pol := range m {
		p.ICs[ICKey{IC: ic}] = pol
	}
	return func(context.Context) (*Policies, error) { return p, nil }
}

func scalingOnly() Config {
	cfg := DefaultConfig()
	cfg.Rules = []string{"scaling"}
	return cfg
}

// diagnoseRegion is diagnoseWith over a region with its policies, as the plugin and
// cmd/diagnose run it.
func diagnoseRegion(t testing.TB, rg Region, scope Scope, cfg Config) Report {
	t.Helper()
	r, err := RunRegions(context.Background(), []Region{rg}, scope, t0, tEnd(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Failures {
		t.Errorf("rule %s failed: %s", f.Rule, f.Error)
	}
	return r
}

// TestScalingPolicies: each IC is judged against its own policy when the policy tracks the
// concurrency the rule reads; at its max capacity the cause is the capacity, not the policy;
// a policy that cannot be read leaves the inferred limit, and the report says so.
func TestScalingPolicies(t *testing.T) {
	d := newData(t)
	d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), constant(12))
	d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "ic-a", "i-1", "az-1")...), constant(50))
	q := d.querier()
	cases := []struct {
		name    string
		src     PolicySource
		cause   string // "" none
		sev     Severity
		next    string // part of the next step
		warning string // part of a report warning
	}{
		{"over its target, below max", policies(map[string]Policy{"ic-a": {Metric: concurrencyMetric, Target: 8, Min: 1, Max: 4, Copies: 2}}),
			causeNoScaleOutText, Critical, "did not scale out", ""},
		{"over its target at max", policies(map[string]Policy{"ic-a": {Metric: concurrencyMetric, Target: 8, Min: 1, Max: 4, Copies: 4}}),
			"max capacity", Critical, "MaxCapacity", ""},
		{"copies unknown", policies(map[string]Policy{"ic-a": {Metric: concurrencyMetric, Target: 8, Min: 1, Max: 4, Copies: -1}}),
			causeNoScaleOutText, Critical, "check whether ic-a was at its max capacity (4 copies; its copies could not be read", ""},
		{"copies denied", func(context.Context) (*Policies, error) {
			return &Policies{ICs: map[ICKey]Policy{{IC: "ic-a"}: {Metric: concurrencyMetric, Target: 8, Min: 1, Max: 4, Copies: -1}}, CopiesAt: tEnd(),
				CopiesErr: errors.New("not allowed sagemaker:DescribeInferenceComponent")}, nil
		}, causeNoScaleOutText, Critical, "its copies could not be read: not allowed sagemaker:DescribeInferenceComponent", ""},
		{"customized concurrency metric", policies(map[string]Policy{"ic-a": {Metric: "ConcurrentRequestsPerCopy", Target: 8, Min: 1, Max: 4, Copies: 1}}),
			causeNoScaleOutText, Critical, "did not scale out", ""},
		{"under its own target", policies(map[string]Policy{"ic-a": {Metric: concurrencyMetric, Target: 14, Min: 1, Max: 4, Copies: 4}}),
			"", 0, "", ""},
		// A steady load is its own usual level: without a comparable target nothing fires.
		{"policy on another metric", policies(map[string]Policy{"ic-a": {Metric: "SageMakerInferenceComponentInvocationsPerCopy", Target: 2, Min: 1, Max: 4, Copies: 1}}),
			"", 0, "", ""},
		{"policies unreadable", func(context.Context) (*Policies, error) {
			return nil, errors.New("not allowed application-autoscaling:DescribeScalableTargets")
		},
			"", 0, "", "could not be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := diagnoseRegion(t, Region{Querier: q, Policies: c.src}, Scope{}, scalingOnly())
			if c.warning != "" && !strings.Contains(strings.Join(r.Warnings, "\n"), c.warning) {
				t.Errorf("warnings %q lack %q", r.Warnings, c.warning)
			}
			if c.cause == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("want none, got%s", describe(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Cause, c.cause) || r.Findings[0].Severity != c.sev || !strings.Contains(r.Findings[0].Next, c.next) {
				t.Fatalf("want %s %q (next: %q), got%s", c.sev, c.cause, c.next, describe(r.Findings))
			}
		})
	}
}

const causeNoScaleOutText = "did not fire"

// TestScalingWithoutAComparablePolicy: an IC the policies do not cover, or whose policy
// tracks another metric, is judged against its usual load (tripled for 80 minutes here), and
// the next step says what the policy read lacks.
func TestScalingWithoutAComparablePolicy(t *testing.T) {
	d := newData(t)
	d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), stepAt(100, 6, 20))
	d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "ic-a", "i-1", "az-1")...), constant(50))
	q := d.querier()
	for _, c := range []struct {
		name string
		pol  map[string]Policy
		next string
	}{
		{"no scalable target", map[string]Policy{"ic-b": {Metric: concurrencyMetric, Target: 8, Min: 1, Max: 4, Copies: 1}}, "ic-a has no scalable target"},
		{"no target tracking policy", map[string]Policy{"ic-a": {Min: 1, Max: 4, Copies: 1}}, "no target tracking policy"},
		{"another metric", map[string]Policy{"ic-a": {Metric: "SageMakerInferenceComponentInvocationsPerCopy", Target: 3, Min: 1, Max: 4, Copies: 1}}, "tracks SageMakerInferenceComponentInvocationsPerCopy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := diagnoseRegion(t, Region{Querier: q, Policies: policies(c.pol)}, Scope{}, scalingOnly())
			if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Cause, causeNoScaleOutText) || r.Findings[0].Severity != Warning || !strings.Contains(r.Findings[0].Next, c.next) {
				t.Fatalf("want a warning that autoscaling did not fire, next step %q, got%s", c.next, describe(r.Findings))
			}
		})
	}
}

// Durations count the time covered, not one step more ("3h1m" on a 3-hour range).
func TestScalingDurationFitsTheRange(t *testing.T) {
	d := newData(t)
	d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), constant(12))
	d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "ic-a", "i-1", "az-1")...), constant(50))
	r := diagnoseRegion(t, Region{Querier: d.querier(), Policies: policies(map[string]Policy{"ic-a": {Metric: concurrencyMetric, Target: 8, Min: 1, Max: 4, Copies: 1}})}, Scope{}, scalingOnly())
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Summary, "for 3h (") {
		t.Fatalf("want one finding lasting the whole 3h range, got%s", describe(r.Findings))
	}
}

// TestScalingAtMaxOnlyNow: the copies are those of the read; a range that ended a day before
// it says nothing of the copies then, so the overload is not put on the max capacity, and
// the next step says the count at the time is unknown.
func TestScalingAtMaxOnlyNow(t *testing.T) {
	d := newData(t)
	d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, "ic-a"), constant(12))
	d.float(lbls(semconv.DCGMGPUUtil, engLabels("ep-a", "ic-a", "i-1", "az-1")...), constant(50))
	atMax := map[ICKey]Policy{{IC: "ic-a"}: {Metric: concurrencyMetric, Target: 8, Min: 1, Max: 4, Copies: 4}}
	for _, c := range []struct {
		name        string
		read        time.Time
		cause, next string
	}{
		{"read at the range end", tEnd(), "max capacity", "MaxCapacity"},
		{"read within two steps", tEnd().Add(90 * time.Second), "max capacity", "MaxCapacity"},
		{"read a day later", tEnd().Add(24 * time.Hour), causeNoScaleOutText, "its copies at that time are unknown: 4 is its count now"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := func(context.Context) (*Policies, error) { return &Policies{ICs: atMax, CopiesAt: c.read}, nil }
			r := diagnoseRegion(t, Region{Querier: d.querier(), Policies: src}, Scope{}, scalingOnly())
			if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Cause, c.cause) || !strings.Contains(r.Findings[0].Next, c.next) {
				t.Fatalf("want %q (next: %q), got%s", c.cause, c.next, describe(r.Findings))
			}
		})
	}
}

// TestScalingAcrossAccounts: a monitoring account sees its source accounts' ICs, but
// Application Auto Scaling answers for its own account only. An IC of its own account
// without a target needs one; an overloaded IC of a source account is judged against its
// usual load, its next step and a report warning name its account; two accounts' ICs of one
// name keep their own policies; a read with no target at all cannot tell the accounts apart.
func TestScalingAcrossAccounts(t *testing.T) {
	const own, source = fleet.MonitoringAccount, fleet.SourceAccount
	d := newData(t)
	for _, x := range []struct{ acct, ic, ep string }{{own, "ic-own", "ep-a"}, {source, "ic-src", "ep-b"}, {own, "ic-both", "ep-c"}, {source, "ic-both", "ep-d"}} {
		d.float(lbls(semconv.ConcurrentRequestsPerCopy, semconv.DimInferenceComponentName, x.ic, semconv.LabelAccount, x.acct), stepAt(100, 6, 20))
		d.float(lbls(semconv.DCGMGPUUtil, append(engLabels(x.ep, x.ic, "i-"+x.ep, "az-1"), semconv.LabelAccount, x.acct)...), constant(50))
	}
	q := d.querier()
	// Only the own account's ic-both has a policy; its target (30) is above the load.
	read := &Policies{Own: []string{own}, CopiesAt: tEnd(), ICs: map[ICKey]Policy{{Account: own, IC: "ic-both"}: {Metric: concurrencyMetric, Target: 30, Min: 1, Max: 4, Copies: 2}}}
	for _, c := range []struct {
		name    string
		read    *Policies
		next    map[string]string // IC -> part of its finding's next step; absent: no finding
		both    int               // findings on ic-both
		warning string
	}{
		{"own account's targets read", read, map[string]string{
			"ic-own":  "ic-own has no scalable target in Application Auto Scaling: register one",
			"ic-src":  "ic-src is in account " + source + ", whose autoscaling this data source's credentials cannot read",
			"ic-both": "ic-both is in account " + source,
		}, 1, "autoscaling policies of account " + source + " are not readable"},
		{"no target at all", &Policies{CopiesAt: tEnd(), ICs: map[ICKey]Policy{}}, map[string]string{
			"ic-own":  "if account " + own + " is this data source's own, register one for ic-own",
			"ic-src":  "if account " + source + " is this data source's own, register one for ic-src",
			"ic-both": "register one for ic-both",
		}, 2, "whether account " + source + " is this data source's own"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := func(context.Context) (*Policies, error) { return c.read, nil }
			r := diagnoseRegion(t, Region{Querier: q, Policies: src}, Scope{}, scalingOnly())
			got := map[string][]Finding{}
			for _, f := range r.Findings {
				got[f.Target.Name] = append(got[f.Target.Name], f)
			}
			for ic, next := range c.next {
				fs := got[ic]
				ok := false
				for _, f := range fs {
					ok = ok || (strings.Contains(f.Next, next) && strings.Contains(f.Cause, causeNoScaleOutText))
				}
				if !ok {
					t.Errorf("%s: want a finding whose next step holds %q, got%s", ic, next, describe(fs))
				}
			}
			if n := len(got["ic-both"]); n != c.both {
				t.Errorf("ic-both: %d findings, want %d (the own account's is under its target when read):%s", n, c.both, describe(got["ic-both"]))
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), c.warning) {
				t.Errorf("warnings %q lack %q", r.Warnings, c.warning)
			}
		})
	}
}

// TestScalingInASourceAccount: through the emulator and the production client, a monitoring
// account whose own IC endpoint has its targets, and a source account's endpoint (chat-ic)
// whose IC code-llama-8b stops scaling. Application Auto Scaling answers for the monitoring
// account only, so the source account's IC is judged against its usual load: not "register
// a scalable target" (it has one, in its own account), and the report names the account.
func TestScalingInASourceAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills a simulated fleet")
	}
	f := fleet.Default()
	own := f.InRegion(f.Region, "own").Endpoints[0] // an IC endpoint of the monitoring account
	f.Account, f.Endpoints[0].Account = fleet.MonitoringAccount, fleet.SourceAccount
	own.Account = fleet.MonitoringAccount
	f.Endpoints = append(f.Endpoints, own)
	rg := startRegion(t, f, "scaling-not-firing", 6, scenarioNow)
	r, err := diagnoseIn(rg, Scope{}, scenarioNow.Add(-3*time.Hour), scenarioNow, scalingOnly())
	if err != nil {
		t.Fatal(err)
	}
	var named bool
	for _, x := range r.Findings {
		if x.Target.Endpoint == own.Name {
			t.Errorf("the monitoring account's healthy endpoint has a finding:%s", describe([]Finding{x}))
		}
		if x.Target.Name != "code-llama-8b" || !strings.Contains(x.Cause, causeNoScaleOutText) {
			continue
		}
		named = true
		if x.Severity != Warning || !strings.Contains(x.Next, "code-llama-8b is in account "+fleet.SourceAccount) || strings.Contains(x.Next, "register one") {
			t.Errorf("want a warning that names the source account, not a missing target, got%s", describe([]Finding{x}))
		}
	}
	if !named {
		t.Fatalf("code-llama-8b's overload not named:%s", describe(r.Findings))
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "autoscaling policies of account "+fleet.SourceAccount+" are not readable") {
		t.Errorf("warnings %q do not name the source account", r.Warnings)
	}
}
