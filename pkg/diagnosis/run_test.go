package diagnosis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// runFrom and runTo are a three-hour range for runs whose querier never answers; the rules
// over real series are tested in the rig module (rig/itest/diagnosis), against a PromQL engine.
var runFrom = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

var runTo = runFrom.Add(3 * time.Hour)

// failingQuerier fails every query and counts them.
type failingQuerier struct {
	err error
	n   atomic.Int32
}

func (f *failingQuerier) Instant(context.Context, string, time.Time) (model.Vector, error) {
	f.n.Add(1)
	return nil, f.err
}

func (f *failingQuerier) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, error) {
	f.n.Add(1)
	return nil, f.err
}

func TestRank(t *testing.T) {
	fs := []Finding{
		{Rule: "b", Severity: Warning, Score: 90, Target: Target{Name: "x"}},
		{Rule: "a", Severity: Critical, Score: 10, Target: Target{Name: "y"}},
		{Rule: "c", Severity: Critical, Score: 50, Target: Target{Name: "z"}},
		{Rule: "a", Severity: Info, Score: 99, Target: Target{Name: "w"}},
		{Rule: "a", Severity: Critical, Score: 50, Target: Target{Name: "v"}},
	}
	Rank(fs)
	var got []string
	for _, f := range fs {
		got = append(got, f.Target.Name)
	}
	if want := "v z y x w"; strings.Join(got, " ") != want {
		t.Fatalf("order %v, want %s (severity, then score, then rule and name)", got, want)
	}
}

func TestRunValidation(t *testing.T) {
	q := &failingQuerier{err: errors.New("x")}
	bad := DefaultConfig()
	bad.KVSaturation = 1.5
	cases := []struct {
		name       string
		q          Querier
		start, end time.Time
		cfg        Config
		want       string
	}{
		{"nil querier", nil, runFrom, runTo, DefaultConfig(), "no querier"},
		{"empty range", q, runTo, runFrom, DefaultConfig(), "time range is empty"},
		{"too long", q, runFrom.Add(-7 * 24 * time.Hour), runTo, DefaultConfig(), "at most 7 days"},
		{"bad threshold", q, runFrom, runTo, bad, "KVSaturation"},
		{"zero config", q, runFrom, runTo, Config{}, "greater than zero"},
		{"unknown rule", q, runFrom, runTo, func() Config { c := DefaultConfig(); c.Rules = []string{"nope"}; return c }(), `unknown rule "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(context.Background(), c.q, Scope{}, c.start, c.end, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if q.n.Load() != 0 {
		t.Fatalf("invalid input must not reach the upstream, %d queries sent", q.n.Load())
	}
}

func TestRunReportsFailingRules(t *testing.T) {
	q := &failingQuerier{err: errors.New("upstream answered HTTP 403: denied")}
	r, err := Run(context.Background(), q, Scope{}, runFrom, runTo, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failures) != querying(runnable(allRules, false)) || len(r.Findings) != 0 {
		t.Fatalf("want every rule to fail and no finding, got %d failures, %d findings", len(r.Failures), len(r.Findings))
	}
	var qe *QueryError
	f := r.Failures[0]
	if !errors.Is(f.Err, q.err) || !errors.As(f.Err, &qe) || f.Query == "" || qe.Query != f.Query || strings.Contains(f.Error, f.Query) {
		t.Fatalf("the failure must carry the upstream error, and the query apart from its text: %+v", f)
	}
	if r.Requests != int(q.n.Load()) {
		t.Fatalf("reported %d requests, upstream saw %d", r.Requests, q.n.Load())
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, &failingQuerier{err: context.Canceled}, Scope{}, runFrom, runTo, DefaultConfig())
	if err != nil || len(r.Failures) != len(runnable(allRules, false)) {
		t.Fatalf("a cancelled run reports every rule as failed: %v, %d failures", err, len(r.Failures))
	}
}

// emptyQuerier answers every query with no series.
type emptyQuerier struct{}

func (emptyQuerier) Instant(context.Context, string, time.Time) (model.Vector, error) {
	return model.Vector{}, nil
}

func (emptyQuerier) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, error) {
	return model.Matrix{}, nil
}

// A rule that panics is reported as a failure with the reason and shown as a row; the other
// rules still run.
func TestPanickingRuleIsAFailure(t *testing.T) {
	saved := allRules
	t.Cleanup(func() { allRules = saved })
	allRules = append(append([]rule{}, saved...), rule{id: "broken", panel: panelErrors, run: func(context.Context, *env) ([]Finding, error) {
		var none []Finding
		return none[len(none)-1:], nil
	}})
	r, err := Run(context.Background(), emptyQuerier{}, Scope{}, runFrom, runTo, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var p *panics.Error
	if len(r.Failures) != 1 || r.Failures[0].Rule != "broken" || !errors.As(r.Failures[0].Err, &p) {
		t.Fatalf("failures %+v: want only the broken rule, with its panic", r.Failures)
	}
	if _, ok := p.Value.(runtime.Error); !ok {
		t.Errorf("panic value %#v, want the runtime error", p.Value)
	}
	fr := Frame(r)
	if n, _ := fr.RowLen(); n != 1 || fr.Fields[2].At(0).(string) != "Rule broken "+NotEvaluated || fr.Fields[4].At(0).(string) != r.Failures[0].Error {
		t.Fatalf("the failed rule must be a row with its reason: %d rows", n)
	}
}

// rangeRecorder answers every query with no series and records the range queries' spans
// and the instant queries' times.
type rangeRecorder struct {
	emptyQuerier
	mu       sync.Mutex
	ranges   map[string]bool
	instants map[time.Time]bool
}

func (r *rangeRecorder) Instant(_ context.Context, _ string, t time.Time) (model.Vector, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.instants[t] = true
	return model.Vector{}, nil
}

func (r *rangeRecorder) Range(_ context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ranges[fmt.Sprint(expr, start.UnixMilli(), end.UnixMilli(), step)] = true
	return model.Matrix{}, nil
}

// TestRangesOnTheStepGrid: the same diagnosis run a few seconds apart (a refresh, viewers
// opening it at once) asks for the same range queries, on the step grid, so the results
// cache can serve them; a run a step later asks for new ones. Instant queries stay at the
// range's end, where the panels evaluate theirs.
func TestRangesOnTheStepGrid(t *testing.T) {
	ask := func(end time.Time) map[string]bool {
		r := &rangeRecorder{ranges: map[string]bool{}, instants: map[time.Time]bool{}}
		if _, err := Run(context.Background(), r, Scope{}, end.Add(-3*time.Hour), end, DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		if len(r.ranges) == 0 || len(r.instants) == 0 {
			t.Fatal("no range or no instant queries: the test proves nothing")
		}
		for at := range r.instants {
			if !at.Equal(end) {
				t.Errorf("an instant query at %s, want the range's end %s", at, end)
			}
		}
		return r.ranges
	}
	at := runTo.Add(17*time.Second + 345*time.Millisecond)
	first, again := ask(at), ask(at.Add(9*time.Second+1))
	if !maps.Equal(first, again) {
		t.Errorf("runs 9 s apart asked for different ranges:\n%v\n%v", first, again)
	}
	if later := ask(at.Add(10 * time.Minute)); maps.Equal(first, later) {
		t.Error("a run 10 minutes later asked for the same ranges")
	}
}
