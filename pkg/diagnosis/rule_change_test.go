package diagnosis

import (
	"context"
	"errors"
	"fmt"
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
