package dashboards_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/dashload"
	"github.com/inferscope/sagemaker-datasource/rig/itest/cwcheck"
)

// builtinSamples stand in for the interval variables the backend interpolates, at a one-minute step.
var builtinSamples = map[string]string{"__rate_interval": "5m", "__range": "6h", "__interval": "1m"}

// parseVars are a dashboard's default variable values plus the interval samples.
func parseVars(d dashload.Board) map[string]string {
	vars := dashload.DefaultVars(d)
	for k, v := range builtinSamples {
		vars[k] = v
	}
	return vars
}

// allExprs lists every PromQL target of the three dashboards with the dashboards' default
// variable values substituted, named for failure messages.
func allExprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for file, d := range dashload.Generated(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if expr, ok := tg["expr"].(string); ok {
					out[fmt.Sprintf("%s/%d %s/%v", file, p.ID, p.Title, tg["refId"])] = dashload.Interpolate(expr, parseVars(d))
				}
			}
		}
		for _, a := range d.Annotations.List {
			if expr, ok := a.Target["expr"].(string); ok {
				out[fmt.Sprintf("%s annotation %s", file, a.Name)] = dashload.Interpolate(expr, parseVars(d))
			}
		}
		for _, v := range d.Templates.List {
			if q, _ := builder.VariableQuery(v.Query); v.Type == "query" {
				// label_values(selector, "label"): the selector must obey the same rules.
				if m := dashload.LabelValuesForm.FindStringSubmatch(q); m != nil {
					out[file+" variable "+v.Name] = dashload.Interpolate(m[1], parseVars(d))
				}
			}
		}
	}
	if len(out) < 60 {
		t.Fatalf("only %d expressions found; the dashboards lost panels", len(out))
	}
	return out
}

func TestEveryTargetParsesAndObeysCloudWatchRules(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for name, raw := range allExprs(t) {
		t.Run(name, func(t *testing.T) {
			expr := raw
			if strings.Contains(strings.ReplaceAll(expr, `"$1"`, ""), "$") {
				t.Fatalf("unsubstituted variable left in %q", expr)
			}
			if strings.Contains(raw, "'") {
				t.Errorf("single quotes in %q: dotted labels must be double-quoted", raw)
			}
			ast, err := p.ParseExpr(expr)
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, expr)
			}
			for _, problem := range cwcheck.Problems(ast) {
				t.Errorf("%s\n%s", problem, raw)
			}
			if !strings.HasSuffix(name, " variable account") {
				for _, s := range selectorsWithoutAccount(ast) {
					t.Errorf("selector %s does not follow the account variable\n%s", s, raw)
				}
			}
		})
	}
}

// selectorsWithoutAccount lists the selectors of an expression that lack the account filter
// at its default (All = .*), which every dashboard selector carries (cross-account data in a
// monitoring account); the account variable's own lookup cannot depend on itself.
func selectorsWithoutAccount(ast parser.Expr) []string {
	var out []string
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == sc.LabelAccount && m.Type == labels.MatchRegexp && m.Value == ".*" {
				return nil
			}
		}
		out = append(out, vs.String())
		return nil
	})
	return out
}

// Engine panels show vLLM and SGLang side by side with the framework in the legend.
func TestEnginePanelsCoverBothEngines(t *testing.T) {
	for name, expr := range allExprs(t) {
		hasVLLM, hasSGLang := strings.Contains(expr, "vllm:"), strings.Contains(expr, "sglang:")
		if hasVLLM && !hasSGLang && !strings.Contains(expr, sc.VLLMPreemptions) {
			t.Errorf("%s queries vLLM without SGLang: %s", name, expr)
		}
	}
}
