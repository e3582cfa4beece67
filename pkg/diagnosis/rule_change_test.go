package diagnosis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// stepFleet answers the ITL query with one series per IC of endpoint "ep": base seconds,
// times factor from rise on for the IC that regresses (rise zero: none does). Every other
// query has no series.
type stepFleet struct {
	emptyQuerier
	ics    []string
	hit    string
	rise   time.Time
	factor float64
}

func (f stepFleet) Range(_ context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if !strings.Contains(expr, sc.VLLMITL) {
		return model.Matrix{}, nil
	}
	var m model.Matrix
	for _, ic := range f.ics {
		s := &model.SampleStream{Metric: model.Metric{sc.LabelEndpoint: "ep", sc.LabelInferenceComp: model.LabelValue(ic)}}
		for t := start; !t.After(end); t = t.Add(step) {
			v := 0.02
			if ic == f.hit && !f.rise.IsZero() && !t.Before(f.rise) {
				v *= f.factor
			}
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v)})
		}
		m = append(m, s)
	}
	return m, nil
}

func deploy(ic string, at time.Time) changes.Change {
	return changes.Change{Time: at, Who: "arn:aws:sts::111122223333:assumed-role/deployer/ci", Action: "UpdateInferenceComponent", Kind: changes.KindComponent,
		Resource: ic, EventID: "ev-" + ic, Diff: []changes.Delta{{Field: changes.FieldImage, From: "repo:1.3", To: "repo:1.4"}, {Field: changes.FieldModel, From: "m", To: "m"}}}
}

// TestChangeRule: on random change times within the range, the change is blamed when the
// signal of its IC rises after it, within the window, and never when the signal rose first,
// when the change is to another IC, or when it is older than the window; without changes
// the rule sends no query, and a source that fails is a warning.
func TestChangeRule(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 3))
	cfg := DefaultConfig()
	cfg.Rules = []string{changeRuleID}
	for i := range 40 {
		at := runFrom.Add(time.Duration(40+r.IntN(100)) * time.Minute).Truncate(time.Minute)
		cases := []struct {
			name   string
			change changes.Change
			rise   time.Duration // from the change to the signal's rise
			blame  bool
		}{
			{"after", deploy("b", at), time.Duration(1+r.IntN(10)) * time.Minute, true},
			{"signal first", deploy("b", at), -time.Duration(1+r.IntN(10)) * time.Minute, false},
			{"other IC", deploy("a", at), 2 * time.Minute, false},
			{"too old", deploy("b", at.Add(-time.Hour)), time.Hour + 2*time.Minute, false},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%d/%s", i, c.name), func(t *testing.T) {
				q := stepFleet{ics: []string{"a", "b"}, hit: "b", rise: c.change.Time.Add(c.rise), factor: 2.5}
				src := func(context.Context, time.Time, time.Time) ([]changes.Change, error) {
					return []changes.Change{c.change}, nil
				}
				rep, err := RunRegions(context.Background(), []Region{{Querier: q, Changes: src}}, Scope{}, runFrom, runTo, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !c.blame {
					if len(rep.Findings) > 0 {
						t.Fatalf("blamed %s: %s", c.change.Resource, rep.Findings[0].Summary)
					}
					return
				}
				if len(rep.Findings) != 1 {
					t.Fatalf("%d findings, want the change on b", len(rep.Findings))
				}
				f := rep.Findings[0]
				want := fmt.Sprintf("ITL P99 on b rose 2.5× from %s after UpdateInferenceComponent by arn:aws:sts::111122223333:assumed-role/deployer/ci: image 1.3 → 1.4", fmtDur(c.rise))
				if f.Rule != changeRuleID || f.Target.Name != "b" || f.Severity != Critical || f.Summary != want {
					t.Fatalf("got %s/%s on %s: %q, want %q", f.Rule, f.Severity, f.Target, f.Summary, want)
				}
			})
		}
	}
	t.Run("no changes", func(t *testing.T) {
		q := &failingQuerier{err: errors.New("no query expected")}
		src := func(context.Context, time.Time, time.Time) ([]changes.Change, error) { return nil, nil }
		rep, err := RunRegions(context.Background(), []Region{{Querier: q, Changes: src}}, Scope{}, runFrom, runTo, cfg)
		if err != nil || len(rep.Findings) > 0 || len(rep.Failures) > 0 || q.n.Load() != 0 {
			t.Fatalf("err %v, findings %v, failures %v, %d queries", err, rep.Findings, rep.Failures, q.n.Load())
		}
	})
	t.Run("denied", func(t *testing.T) {
		src := func(context.Context, time.Time, time.Time) ([]changes.Change, error) {
			return nil, errors.New("cloudtrail:LookupEvents denied")
		}
		rep, err := RunRegions(context.Background(), []Region{{Querier: emptyQuerier{}, Changes: src}}, Scope{}, runFrom, runTo, cfg)
		if err != nil || len(rep.Findings) > 0 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "cloudtrail:LookupEvents") {
			t.Fatalf("err %v, findings %v, warnings %q", err, rep.Findings, rep.Warnings)
		}
	})
}

// fnFleet answers the ITL query with one series per IC of endpoint "ep", valued by itl;
// every other query has no series.
type fnFleet struct {
	emptyQuerier
	ics []string
	itl func(ic string, t time.Time) float64
}

func (f fnFleet) Range(_ context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if !strings.Contains(expr, sc.VLLMITL) {
		return model.Matrix{}, nil
	}
	var m model.Matrix
	for _, ic := range f.ics {
		s := &model.SampleStream{Metric: model.Metric{sc.LabelEndpoint: "ep", sc.LabelInferenceComp: model.LabelValue(ic)}}
		for t := start; !t.After(end); t = t.Add(step) {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(f.itl(ic, t))})
		}
		m = append(m, s)
	}
	return m, nil
}

// noisy is a healthy ITL P99 of 20 ms with ±15 % noise, fixed per IC and minute.
func noisy(seed uint64, ic string, t time.Time) float64 {
	r := rand.New(rand.NewPCG(seed, uint64(t.Unix())^uint64(len(ic))<<40^uint64(ic[0])<<48))
	return 0.02 * (0.85 + 0.3*r.Float64())
}

func runChanges(t *testing.T, q Querier, cs ...changes.Change) Report {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Rules = []string{changeRuleID}
	src := func(context.Context, time.Time, time.Time) ([]changes.Change, error) { return cs, nil }
	rep, err := RunRegions(context.Background(), []Region{{Querier: q, Changes: src}}, Scope{}, runFrom, runTo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestChangeRuleScaling: a scale-out's new copies loading raise latency for a while; a
// change the autoscaler made, or any change that only adds copies, is never blamed for it,
// while a human's copy-count decrease followed by the same rise is.
func TestChangeRuleScaling(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 1))
	copies := func(who, from, to string, at time.Time) changes.Change {
		return changes.Change{Time: at, Who: who, Action: "UpdateInferenceComponentRuntimeConfig", Kind: changes.KindComponent,
			Resource: "b", EventID: "ev-copies", Diff: []changes.Delta{{Field: changes.FieldCopies, From: from, To: to}}}
	}
	const role = "arn:aws:sts::111122223333:assumed-role/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint/AutoScaling"
	const human = "arn:aws:sts::111122223333:assumed-role/deployer/ci"
	for i := range 10 {
		at := runFrom.Add(time.Duration(40+r.IntN(100)) * time.Minute).Truncate(time.Minute)
		q := fnFleet{ics: []string{"a", "b"}, itl: func(ic string, t time.Time) float64 {
			v := noisy(uint64(i), ic, t)
			if ic == "b" && !t.Before(at.Add(2*time.Minute)) {
				v *= 2.5
			}
			return v
		}}
		for _, c := range []struct {
			name   string
			change changes.Change
			blame  bool
		}{
			{"autoscaler role", copies(role, "", "4", at), false},
			{"autoscaler invokedBy", copies("application-autoscaling.amazonaws.com", "4", "2", at), false},
			{"human scale-out", copies(human, "2", "4", at), false},
			{"human scale-in", copies(human, "4", "2", at), true},
		} {
			t.Run(fmt.Sprintf("%d/%s", i, c.name), func(t *testing.T) {
				rep := runChanges(t, q, c.change)
				if got := len(rep.Findings) > 0; got != c.blame {
					t.Fatalf("blamed %v (%v), want %v", got, rep.Findings, c.blame)
				}
			})
		}
	}
}

// jumpy is a healthy per-IC ITL P99 of 20 ms, log-normally noisy as a P99 of a few
// requests a minute is: a point 1.5 times the median is common, two in a row happen.
func jumpy(seed uint64, ic string, t time.Time) float64 {
	r := rand.New(rand.NewPCG(seed, uint64(t.Unix())^uint64(ic[0])<<48))
	return 0.02 * math.Exp(0.35*r.NormFloat64())
}

// TestChangeRuleNoise: a healthy fleet with noisy P99s and N random deploys with no effect
// on the same ICs, each with a warm-up spike (new copies loading), blames nothing.
func TestChangeRuleNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 2))
	for i := range 30 {
		var cs []changes.Change
		for range 1 + r.IntN(6) {
			ic := []string{"a", "b"}[r.IntN(2)]
			cs = append(cs, deploy(ic, runFrom.Add(time.Duration(r.IntN(180))*time.Minute).Truncate(time.Minute)))
		}
		q := fnFleet{ics: []string{"a", "b"}, itl: func(ic string, at time.Time) float64 {
			v := jumpy(uint64(i), ic, at)
			for _, c := range cs {
				if c.Resource == ic && !at.Before(c.Time) && at.Before(c.Time.Add(4*time.Minute)) {
					v *= 3 // loading: slow for the warm-up, then as before
				}
			}
			return v
		}}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if rep := runChanges(t, q, cs...); len(rep.Findings) > 0 {
				t.Fatalf("%d deploys, blamed: %s", len(cs), rep.Findings[0].Summary)
			}
		})
	}
}

// TestChangeRuleRisingBefore: a signal that began 3 to 10 minutes before the change is not
// blamed on it, even when one point just before the change dips back to the baseline.
func TestChangeRuleRisingBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 4))
	for i := range 30 {
		at := runFrom.Add(time.Duration(40+r.IntN(100)) * time.Minute).Truncate(time.Minute)
		rise := at.Add(-time.Duration(3+r.IntN(8)) * time.Minute)
		dip := at.Add(-time.Duration(r.IntN(3)) * time.Minute)
		q := fnFleet{ics: []string{"a", "b"}, itl: func(ic string, t time.Time) float64 {
			if ic == "b" && !t.Before(rise) && !t.Equal(dip) {
				return 0.05
			}
			return 0.02
		}}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if rep := runChanges(t, q, deploy("b", at)); len(rep.Findings) > 0 {
				t.Fatalf("rise %v, dip %v before the change; blamed: %s", at.Sub(rise), at.Sub(dip), rep.Findings[0].Summary)
			}
		})
	}
}

// TestChangeRuleNamesWhatItMeasured: the rise after an endpoint update is measured against
// that update's before; attribution ranks an older deploy on the IC first (closer scope),
// whose own before was higher. The finding must not name the deploy with the update's
// numbers: it names the change it measured, or none.
func TestChangeRuleNamesWhatItMeasured(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 5))
	for i := range 10 {
		t0 := runFrom.Add(time.Duration(50+r.IntN(80)) * time.Minute).Truncate(time.Minute)
		dep := deploy("b", t0)
		upd := changes.Change{Time: t0.Add(20 * time.Minute), Who: "arn:aws:sts::111122223333:assumed-role/deployer/ci", Action: "UpdateEndpoint",
			Kind: changes.KindEndpoint, Resource: "ep", Endpoint: "ep", EventID: "ev-ep"}
		q := fnFleet{ics: []string{"a", "b"}, itl: func(ic string, t time.Time) float64 {
			if ic == "b" && (t.Before(t0) || !t.Before(upd.Time.Add(2*time.Minute))) {
				return 0.05 // slow until the deploy, and again from 2 minutes after the update
			}
			return 0.02
		}}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			for _, f := range runChanges(t, q, dep, upd).Findings {
				if !strings.Contains(f.Summary, "UpdateEndpoint") {
					t.Fatalf("named another change than the one measured: %s", f.Summary)
				}
			}
		})
	}
}
