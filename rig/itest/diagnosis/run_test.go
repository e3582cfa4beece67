package diagnosis_test

import (
	"strings"
	"testing"

	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

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
