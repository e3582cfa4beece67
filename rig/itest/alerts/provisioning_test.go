// Package alerts_test checks the generated alert rules (provisioning/alerting/) the way
// Grafana would load and evaluate them: the file against Grafana's file-provisioning schema,
// every query against the Prometheus parser and CloudWatch's rules, and every rule through
// the plugin's alerting path against the emulator in each scenario.
package alerts_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	"github.com/inferscope/sagemaker-datasource/internal/alerttmpl"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/rig/itest/cwcheck"
)

// repoRoot is the root module, two levels above rig/itest/alerts.
const repoRoot = "../../.."

// rule is what the tests read of one provisioned rule; the schema test reads the raw
// document separately so a missing or mistyped field cannot hide behind a zero value.
type rule struct {
	UID, Title, Condition, For string
	Group                      string
	Interval                   time.Duration
	DashboardUID               string
	PanelID                    int
	Labels, Annotations        map[string]string
	Query                      string        // refId A's PromQL
	Window                     time.Duration // refId A's relative time range
	Reducer, ReduceMode        string
	Op                         string
	Threshold                  float64
	Pending                    time.Duration
}

func readRaw(t testing.TB) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "provisioning", "alerting", builder.AlertsFile))
	if err != nil {
		t.Fatalf("reading the provisioning file (generate it with go run ./dashboards/cmd/gen): %v", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("provisioning file is not YAML: %v", err)
	}
	return doc
}

// loadRules decodes the provisioning file into rules (the schema test proves the shape).
func loadRules(t testing.TB) []rule {
	t.Helper()
	doc := readRaw(t)
	var out []rule
	for _, g := range list(doc["groups"]) {
		gm := g.(map[string]any)
		interval := mustDur(t, gm["interval"].(string))
		for _, r := range list(gm["rules"]) {
			rm := r.(map[string]any)
			ru := rule{
				UID: str(rm["uid"]), Title: str(rm["title"]), Condition: str(rm["condition"]), For: str(rm["for"]),
				Group: str(gm["name"]), Interval: interval, DashboardUID: str(rm["dashboardUid"]),
				Labels: provisioned(strMap(rm["labels"])), Annotations: strMap(rm["annotations"]),
				Pending: mustDur(t, str(rm["for"])),
			}
			if id, ok := rm["panelId"].(int); ok {
				ru.PanelID = id
			}
			for _, q := range list(rm["data"]) {
				qm := q.(map[string]any)
				m := qm["model"].(map[string]any)
				switch str(qm["refId"]) {
				case "A":
					ru.Query = str(m["expr"])
					if tr, ok := qm["relativeTimeRange"].(map[string]any); ok {
						if from, ok := tr["from"].(int); ok {
							ru.Window = time.Duration(from) * time.Second
						}
					}
				case "B":
					ru.Reducer = str(m["reducer"])
					if s, ok := m["settings"].(map[string]any); ok {
						ru.ReduceMode = str(s["mode"])
					}
				case "C":
					for _, c := range list(m["conditions"]) {
						ev := c.(map[string]any)["evaluator"].(map[string]any)
						ru.Op = str(ev["type"])
						if ps := list(ev["params"]); len(ps) > 0 {
							ru.Threshold = toFloat(ps[0])
						}
					}
				}
			}
			out = append(out, ru)
		}
	}
	if len(out) == 0 {
		t.Fatal("no rules in the provisioning file")
	}
	return out
}

// provisioned is a label map as Grafana's file provisioning stores it: expanded like an
// environment-variable reference, no variable set.
func provisioned(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		out[k] = alerttmpl.ExpandProvisioning(v, nil)
	}
	return out
}

func list(v any) []any { l, _ := v.([]any); return l }
func str(v any) string { s, _ := v.(string); return s }
func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func strMap(v any) map[string]string {
	out := map[string]string{}
	m, _ := v.(map[string]any)
	for k, x := range m {
		out[k] = str(x)
	}
	return out
}

func mustDur(t testing.TB, s string) time.Duration {
	t.Helper()
	d, err := model.ParseDuration(s)
	if err != nil {
		t.Fatalf("duration %q: %v", s, err)
	}
	return time.Duration(d)
}

// The fields Grafana's file provisioning of alert rules requires, with their types; uids
// unique and short enough; every refId an expression or the condition names exists; the
// PromQL query goes to the provisioned Inferscope data source, expressions to __expr__.
func TestProvisioningSchema(t *testing.T) {
	problems := schemaProblems(readRaw(t))
	for _, p := range problems {
		t.Error(p)
	}
}

var uidPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)

func schemaProblems(doc map[string]any) []string {
	var out []string
	bad := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	if v, ok := doc["apiVersion"].(int); !ok || v != 1 {
		bad("apiVersion must be the integer 1, got %#v", doc["apiVersion"])
	}
	groups, ok := doc["groups"].([]any)
	if !ok || len(groups) == 0 {
		return append(out, "groups must be a non-empty list")
	}
	uids := map[string]bool{}
	dashboards := map[string]map[int]bool{}
	for gi, g := range groups {
		gm, ok := g.(map[string]any)
		if !ok {
			bad("groups[%d] is not a mapping", gi)
			continue
		}
		for _, f := range []string{"name", "folder", "interval"} {
			if s, ok := gm[f].(string); !ok || s == "" {
				bad("groups[%d].%s must be a non-empty string", gi, f)
			}
		}
		if d, err := model.ParseDuration(str(gm["interval"])); err != nil || time.Duration(d) < 10*time.Second {
			bad("groups[%d].interval %q must be a duration of at least 10s", gi, gm["interval"])
		}
		if o, ok := gm["orgId"]; ok {
			if _, isInt := o.(int); !isInt {
				bad("groups[%d].orgId must be an integer", gi)
			}
		}
		rules, ok := gm["rules"].([]any)
		if !ok || len(rules) == 0 {
			bad("groups[%d].rules must be a non-empty list", gi)
			continue
		}
		for ri, r := range rules {
			at := fmt.Sprintf("%s rule %d", str(gm["name"]), ri)
			rm, ok := r.(map[string]any)
			if !ok {
				bad("%s is not a mapping", at)
				continue
			}
			uid := str(rm["uid"])
			if !uidPattern.MatchString(uid) {
				bad("%s: uid %q must be 1-40 letters, digits, - or _", at, uid)
			}
			if uids[uid] {
				bad("%s: uid %q is used twice", at, uid)
			}
			uids[uid] = true
			at = uid
			for _, f := range []string{"title", "condition", "for"} {
				if s, ok := rm[f].(string); !ok || s == "" {
					bad("%s: %s must be a non-empty string", at, f)
				}
			}
			if _, err := model.ParseDuration(str(rm["for"])); err != nil {
				bad("%s: for %q is not a duration", at, rm["for"])
			}
			if s := str(rm["noDataState"]); s != "OK" && s != "NoData" && s != "Alerting" {
				bad("%s: noDataState %q must be OK, NoData or Alerting", at, s)
			}
			if s := str(rm["execErrState"]); s != "OK" && s != "Error" && s != "Alerting" {
				bad("%s: execErrState %q must be OK, Error or Alerting", at, s)
			}
			for _, f := range []string{"labels", "annotations"} {
				m, ok := rm[f].(map[string]any)
				if !ok {
					bad("%s: %s must be a mapping", at, f)
				}
				for k, v := range m {
					if _, ok := v.(string); !ok {
						bad("%s: %s.%s must be a string", at, f, k)
					}
				}
			}
			if p, _ := rm["isPaused"].(bool); p {
				bad("%s: provisioned paused", at)
			}
			// The evidence panel must exist in the generated dashboard.
			dash, panel := str(rm["dashboardUid"]), rm["panelId"]
			if pid, ok := panel.(int); !ok || dash == "" {
				bad("%s: dashboardUid and panelId (integer) are required for the evidence link", at)
			} else {
				if dashboards[dash] == nil {
					dashboards[dash] = dashboardPanels(dash)
				}
				if !dashboards[dash][pid] {
					bad("%s: panel %d does not exist in dashboard %s", at, pid, dash)
				}
			}
			out = append(out, dataProblems(at, rm)...)
		}
	}
	return out
}

// dataProblems checks a rule's queries and expressions.
func dataProblems(at string, rm map[string]any) []string {
	var out []string
	bad := func(f string, a ...any) { out = append(out, at+": "+fmt.Sprintf(f, a...)) }
	data, ok := rm["data"].([]any)
	if !ok || len(data) == 0 {
		return append(out, at+": data must be a non-empty list")
	}
	refs := map[string]bool{}
	var uses []string
	for qi, q := range data {
		qm, ok := q.(map[string]any)
		if !ok {
			bad("data[%d] is not a mapping", qi)
			continue
		}
		ref := str(qm["refId"])
		if ref == "" || refs[ref] {
			bad("data[%d]: refId %q missing or repeated", qi, ref)
		}
		refs[ref] = true
		tr, ok := qm["relativeTimeRange"].(map[string]any)
		from, okF := tr["from"].(int)
		to, okT := tr["to"].(int)
		if !ok || !okF || !okT || from <= to {
			bad("%s: relativeTimeRange needs integer seconds from > to, got %v", ref, qm["relativeTimeRange"])
		}
		m, ok := qm["model"].(map[string]any)
		if !ok {
			bad("%s: model must be a mapping", ref)
			continue
		}
		if str(m["refId"]) != ref {
			bad("%s: model.refId %q differs", ref, m["refId"])
		}
		ds := str(qm["datasourceUid"])
		mds, _ := m["datasource"].(map[string]any)
		switch typ := str(m["type"]); typ {
		case "reduce", "threshold", "math":
			if ds != "__expr__" || str(mds["uid"]) != "__expr__" {
				bad("%s: an expression's datasourceUid must be __expr__", ref)
			}
			uses = append(uses, strings.TrimPrefix(str(m["expression"]), "$"))
			if typ == "reduce" && !oneOf(str(m["reducer"]), "last", "mean", "max", "min", "sum", "count") {
				bad("%s: unknown reducer %q", ref, m["reducer"])
			}
			if typ == "threshold" {
				conds := list(m["conditions"])
				if len(conds) != 1 {
					bad("%s: a threshold needs one condition", ref)
				}
				for _, c := range conds {
					ev, _ := c.(map[string]any)["evaluator"].(map[string]any)
					ps := list(ev["params"])
					if !oneOf(str(ev["type"]), "gt", "lt") || len(ps) != 1 {
						bad("%s: evaluator must be gt/lt with one parameter, got %v", ref, ev)
					}
					for _, p := range ps {
						if _, isNum := p.(float64); !isNum {
							if _, isInt := p.(int); !isInt {
								bad("%s: threshold parameter %v is not a number", ref, p)
							}
						}
					}
				}
			}
		case "":
			if ds != builder.AlertDatasourceUID || str(mds["uid"]) != ds || str(mds["type"]) != models.PluginID {
				bad("%s: a query must go to the provisioned %s data source %q, got %q (model %v)", ref, models.PluginID, builder.AlertDatasourceUID, ds, mds)
			}
			if str(m["expr"]) == "" || m["instant"] != true {
				bad("%s: a query needs expr and instant: true", ref)
			}
		default:
			bad("%s: unknown expression type %q", ref, typ)
		}
	}
	for _, u := range append(uses, str(rm["condition"])) {
		if !refs[u] {
			bad("refId %q is referenced but not defined", u)
		}
	}
	return out
}

func oneOf(s string, options ...string) bool {
	for _, o := range options {
		if s == o {
			return true
		}
	}
	return false
}

// dashboardPanels lists the panel ids of a generated dashboard by uid.
func dashboardPanels(uid string) map[int]bool {
	files, _ := filepath.Glob(filepath.Join(repoRoot, "provisioning", "dashboards", "*.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var d struct {
			UID    string `json:"uid"`
			Panels []struct {
				ID int `json:"id"`
			} `json:"panels"`
		}
		if json.Unmarshal(raw, &d) != nil || d.UID != uid {
			continue
		}
		out := map[int]bool{}
		for _, p := range d.Panels {
			out[p.ID] = true
		}
		return out
	}
	return map[int]bool{}
}

// The schema check must catch each kind of defect, or passing it proves nothing.
func TestSchemaCatchesDefects(t *testing.T) {
	cases := []struct {
		name, want string
		edit       func(r map[string]any, g map[string]any, doc map[string]any)
	}{
		{"api version", "apiVersion", func(_, _, d map[string]any) { d["apiVersion"] = "1" }},
		{"folder missing", ".folder", func(_, g, _ map[string]any) { delete(g, "folder") }},
		{"bad interval", ".interval", func(_, g, _ map[string]any) { g["interval"] = "soon" }},
		{"long uid", "uid", func(r, _, _ map[string]any) { r["uid"] = strings.Repeat("x", 41) }},
		{"condition undefined", `"Z" is referenced`, func(r, _, _ map[string]any) { r["condition"] = "Z" }},
		{"bad for", "for", func(r, _, _ map[string]any) { r["for"] = "5 minutes" }},
		{"noData state", "noDataState", func(r, _, _ map[string]any) { r["noDataState"] = "Firing" }},
		{"label type", "labels.severity", func(r, _, _ map[string]any) { r["labels"].(map[string]any)["severity"] = 3 }},
		{"panel", "does not exist", func(r, _, _ map[string]any) { r["panelId"] = 999 }},
		{"datasource", "provisioned", func(r, _, _ map[string]any) {
			list(r["data"])[0].(map[string]any)["datasourceUid"] = "prometheus"
		}},
		{"expression input", `"Q" is referenced`, func(r, _, _ map[string]any) {
			list(r["data"])[1].(map[string]any)["model"].(map[string]any)["expression"] = "Q"
		}},
		{"evaluator", "evaluator", func(r, _, _ map[string]any) {
			m := list(r["data"])[2].(map[string]any)["model"].(map[string]any)
			list(m["conditions"])[0].(map[string]any)["evaluator"].(map[string]any)["type"] = "above"
		}},
		{"time range", "relativeTimeRange", func(r, _, _ map[string]any) {
			list(r["data"])[0].(map[string]any)["relativeTimeRange"] = map[string]any{"from": 0, "to": 0}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := readRaw(t)
			g := list(doc["groups"])[0].(map[string]any)
			c.edit(list(g["rules"])[0].(map[string]any), g, doc)
			got := strings.Join(schemaProblems(doc), "\n")
			if !strings.Contains(got, c.want) {
				t.Fatalf("defect not reported (want a problem mentioning %q); got:\n%s", c.want, got)
			}
		})
	}
	t.Run("duplicate uid", func(t *testing.T) {
		doc := readRaw(t)
		rules := list(list(doc["groups"])[0].(map[string]any)["rules"])
		rules[1].(map[string]any)["uid"] = rules[0].(map[string]any)["uid"]
		if got := strings.Join(schemaProblems(doc), "\n"); !strings.Contains(got, "used twice") {
			t.Fatalf("duplicate uid not reported: %s", got)
		}
	})
}

// Every rule's query parses, names a metric in every selector, quotes dotted labels and uses
// sum_over_time on delta metrics; the emulator's own checks run in the scenario test.
func TestQueriesParseAndObeyCloudWatchRules(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, r := range loadRules(t) {
		t.Run(r.UID, func(t *testing.T) {
			if strings.Contains(strings.ReplaceAll(r.Query, `"$1"`, ""), "$") {
				t.Fatalf("a template variable in an alert query: %s", r.Query)
			}
			ast, err := p.ParseExpr(r.Query)
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, r.Query)
			}
			if len(r.Query) > 10000 {
				t.Errorf("the query is %d characters; CloudWatch's PromQL alarms stop at 10,000", len(r.Query))
			}
			if ast.Type() != parser.ValueTypeVector {
				t.Errorf("the query returns %s; an alert query must return an instant vector", ast.Type())
			}
			for _, problem := range cwcheck.Problems(ast) {
				t.Errorf("%s\n%s", problem, r.Query)
			}
			// Range selectors and offsets must fit in the query's relative time range, so
			// Grafana's time range tells the truth about what a rule reads.
			var longest time.Duration
			parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
				if ms, ok := n.(*parser.MatrixSelector); ok {
					off := ms.VectorSelector.(*parser.VectorSelector).OriginalOffset
					longest = max(longest, ms.Range+off)
				}
				return nil
			})
			if longest > r.Window {
				t.Errorf("reads %s of data but its relative time range is %s", longest, r.Window)
			}
		})
	}
}
