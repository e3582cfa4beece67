package diagnosis

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

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
		{"nil querier", nil, t0, tEnd(), DefaultConfig(), "no querier"},
		{"empty range", q, tEnd(), t0, DefaultConfig(), "time range is empty"},
		{"too long", q, t0.Add(-7 * 24 * time.Hour), tEnd(), DefaultConfig(), "at most 7 days"},
		{"bad threshold", q, t0, tEnd(), bad, "KVSaturation"},
		{"zero config", q, t0, tEnd(), Config{}, "greater than zero"},
		{"unknown rule", q, t0, tEnd(), func() Config { c := DefaultConfig(); c.Rules = []string{"nope"}; return c }(), `unknown rule "nope"`},
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
	r, err := Run(context.Background(), q, Scope{}, t0, tEnd(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failures) != len(allRules) || len(r.Findings) != 0 {
		t.Fatalf("want every rule to fail and no finding, got %d failures, %d findings", len(r.Failures), len(r.Findings))
	}
	if !strings.Contains(r.Failures[0].Error, "HTTP 403: denied") || r.Failures[0].Query == "" || strings.Contains(r.Failures[0].Error, r.Failures[0].Query) {
		t.Fatalf("the failure must carry the upstream error, and the query apart: %+v", r.Failures[0])
	}
	if r.Requests != int(q.n.Load()) {
		t.Fatalf("reported %d requests, upstream saw %d", r.Requests, q.n.Load())
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, &failingQuerier{err: context.Canceled}, Scope{}, t0, tEnd(), DefaultConfig())
	if err != nil || len(r.Failures) != len(allRules) {
		t.Fatalf("a cancelled run reports every rule as failed: %v, %d failures", err, len(r.Failures))
	}
}

// TestRunSharesQueries: rules asking for the same signal send it once, and the count in the
// report is what the upstream saw.
func TestRunSharesQueries(t *testing.T) {
	d := newData(t)
	d.gpu("ep-a", "ic-a", "i-1", "az-1", constant(50))
	single := diagnose(t, d.querier(), Scope{}, "gpu-memory")
	q := d.querier()
	both := diagnose(t, q, Scope{}, "gpu-memory", "vram-drop")
	if single.Requests != 2 || both.Requests != single.Requests || q.n != both.Requests {
		t.Fatalf("gpu-memory and vram-drop share their two queries; alone %d, together %d, upstream %d:\n%s", single.Requests, both.Requests, q.n, strings.Join(q.log, "\n"))
	}
	full := diagnose(t, d.querier(), Scope{Endpoint: "ep-a"})
	if full.Requests > 20 {
		t.Fatalf("a full run made %d requests; the budget is 40 and the design ~16", full.Requests)
	}
}

// TestQueriesFollowCloudWatchRules parses every query a full run sends and checks the
// CloudWatch rules: a metric name in every selector, dotted label names quoted.
func TestQueriesFollowCloudWatchRules(t *testing.T) {
	d := newData(t)
	q := d.querier()
	diagnose(t, q, Scope{Endpoint: `ep "quoted"`, InferenceComponent: "ic-a"})
	if len(q.log) == 0 {
		t.Fatal("no query sent")
	}
	for _, expr := range q.log {
		if strings.Contains(expr, "aws_sagemaker") || strings.Contains(expr, "resource_host") {
			t.Errorf("underscore label spelling matches nothing on CloudWatch: %s", expr)
		}
		if err := checkSelectors(expr); err != nil {
			t.Errorf("%v in %s", err, expr)
		}
	}
}

// TestRunWarnsAtTheSeriesLimit: a result as large as the upstream's cap may be cut, and the
// report says so instead of silently missing resources.
func TestRunWarnsAtTheSeriesLimit(t *testing.T) {
	d := newData(t)
	for _, h := range []string{"i-1", "i-2", "i-3"} {
		d.gpu("ep-a", "ic-a", h, "az-1", constant(50))
	}
	q := d.querier()
	cfg := DefaultConfig()
	cfg.Rules = []string{"gpu-memory"}
	if r := diagnoseWith(t, q, Scope{}, cfg); len(r.Warnings) != 0 {
		t.Fatalf("3 series under the limit: no warning expected, got %v", r.Warnings)
	}
	cfg.SeriesLimit = 3
	r := diagnoseWith(t, q, Scope{}, cfg)
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "narrow the scope") {
		t.Fatalf("want one truncation warning, got %v", r.Warnings)
	}
}

// TestRunOnEmptyData: an account with no matching series gets no finding and no failure
// from any rule (every rule handles empty results).
func TestRunOnEmptyData(t *testing.T) {
	for _, scope := range []Scope{{}, {Endpoint: "ep-a"}, {Endpoint: "ep-a", InferenceComponent: "ic-a"}} {
		r := diagnose(t, newData(t).querier(), scope)
		if len(r.Findings) != 0 || len(r.Failures) != 0 || r.Findings == nil {
			t.Fatalf("%s: findings %v, failures %v", scope, r.Findings, r.Failures)
		}
	}
}
