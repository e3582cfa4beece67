package dashboards_test

import (
	"fmt"
	"strings"
	"testing"

	promlabels "github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// deltaMetrics are the classic vended metrics CloudWatch stores with delta temporality.
var deltaMetrics = map[string]bool{
	sc.Invocations: true, sc.InvocationsByInstanceID: true, sc.InvocationsForIC: true, sc.InvocationsForICByInstanceID: true,
	sc.Invocation4XXErrors: true, sc.Invocation5XXErrors: true, sc.InvocationModelErrors: true,
	sc.Invocation4XXErrorsByInstance: true, sc.Invocation5XXErrorsByInstance: true,
	sc.Invocation4XXErrorsForIC: true, sc.Invocation5XXErrorsForIC: true,
	sc.ModelLatency: true, sc.OverheadLatency: true, sc.FirstChunkModelLatency: true, sc.FirstChunkOverheadLatency: true,
	sc.ConcurrentRequestsPerCopy: true, sc.MidStreamErrors: true,
}

// cumulativeOnly are functions that assume cumulative counters and go silently wrong on deltas.
var cumulativeOnly = map[string]bool{"rate": true, "irate": true, "increase": true, "resets": true}

// underscoreSpellings are the dotted/@ label names written with underscores: valid PromQL that
// matches nothing on CloudWatch.
func underscoreSpellings() map[string]string {
	out := map[string]string{}
	for _, l := range []string{sc.LabelEndpoint, sc.LabelVariant, sc.LabelInferenceComp, sc.LabelContainerID, sc.LabelContainerName, sc.LabelFramework, sc.LabelScalingDirection,
		sc.LabelOperationType, sc.LabelEventInstanceType, sc.LabelEventAZ, sc.LabelHostID, sc.LabelHostType, sc.LabelAZ, sc.LabelResourceID, sc.LabelAccount, sc.LabelRegion} {
		u := strings.NewReplacer(".", "_", "@", "").Replace(l)
		out[u] = l
		out["_"+u] = l
	}
	return out
}

// builtinSamples stand in for the interval variables the backend interpolates, at a one-minute step.
var builtinSamples = map[string]string{"__rate_interval": "5m", "__range": "6h", "__interval": "1m"}

// parseVars are a dashboard's default variable values plus the interval samples.
func parseVars(d dashboard) map[string]string {
	vars := defaultVars(d)
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
	for file, d := range decodeAll(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if expr, ok := tg["expr"].(string); ok {
					out[fmt.Sprintf("%s/%d %s/%v", file, p.ID, p.Title, tg["refId"])] = interpolate(expr, parseVars(d))
				}
			}
		}
		for _, v := range d.Templates.List {
			if q, ok := v.Query.(string); ok && v.Type == "query" {
				// label_values(selector, "label"): the selector must obey the same rules.
				if m := labelValuesForm.FindStringSubmatch(q); m != nil {
					out[file+" variable "+v.Name] = interpolate(m[1], parseVars(d))
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
	under := underscoreSpellings()
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
			for _, problem := range cloudWatchProblems(ast, under) {
				t.Errorf("%s\n%s", problem, raw)
			}
		})
	}
}

// cloudWatchProblems walks the AST for what CloudWatch rejects or silently mis-answers.
func cloudWatchProblems(ast parser.Expr, under map[string]string) []string {
	var problems []string
	checkLabel := func(where, name string) {
		if dotted, bad := under[name]; bad {
			problems = append(problems, fmt.Sprintf("%s uses %q, which matches nothing; write %q", where, name, dotted))
		}
	}
	parser.Inspect(ast, func(node parser.Node, path []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			name := ""
			for _, m := range n.LabelMatchers {
				checkLabel("matcher", m.Name)
				if m.Name != promlabels.MetricName {
					continue
				}
				if m.Type != promlabels.MatchEqual {
					problems = append(problems, fmt.Sprintf("selector %s matches the metric name with %s; CloudWatch needs an exact name", n, m.Type))
				}
				name = m.Value
			}
			if name == "" {
				problems = append(problems, fmt.Sprintf("selector %s has no metric name", n))
			}
			if deltaMetrics[name] {
				for _, anc := range path {
					if c, ok := anc.(*parser.Call); ok && cumulativeOnly[c.Func.Name] {
						problems = append(problems, fmt.Sprintf("delta metric %s inside %s(): use sum_over_time", name, c.Func.Name))
					}
				}
			}
		case *parser.AggregateExpr:
			for _, g := range n.Grouping {
				checkLabel("grouping", g)
			}
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				for _, g := range append(append([]string{}, n.VectorMatching.MatchingLabels...), n.VectorMatching.Include...) {
					checkLabel("vector matching", g)
				}
			}
		case *parser.Call:
			if n.Func.Name == "label_replace" {
				for _, i := range []int{1, 3} {
					if s, ok := n.Args[i].(*parser.StringLiteral); ok {
						checkLabel("label_replace", s.Val)
					}
				}
			}
		}
		return nil
	})
	return problems
}

// The checker itself must catch each rule's violation, or the test above proves nothing.
func TestCloudWatchChecksCatchViolations(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	under := underscoreSpellings()
	cases := []struct{ name, expr, want string }{
		{"no metric name", `{"aws.sagemaker.endpoint.name"="a"}`, "no metric name"},
		{"name regex", `{__name__=~"vllm:.*"}`, "exact name"},
		{"underscore label", `vllm:num_requests_running{aws_sagemaker_endpoint_name="a"}`, "matches nothing"},
		{"underscore grouping", `sum by (resource_host_id) (vllm:num_requests_running)`, "matches nothing"},
		{"underscore on()", `a and on (aws_sagemaker_endpoint_name) b`, "matches nothing"},
		{"rate on delta", `rate(Invocations[5m])`, "delta metric"},
		{"increase on delta deep", `sum(increase(ModelLatency{EndpointName="x"}[5m]))`, "delta metric"},
		{"clean", `sum by ("@resource.host.id") (rate(vllm:generation_tokens_total{"aws.sagemaker.endpoint.name"=~".*"}[5m]))`, ""},
		{"clean delta", `sum(sum_over_time(Invocations{EndpointName=~".*"}[5m])) / 300`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ast, err := p.ParseExpr(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(cloudWatchProblems(ast, under), "; ")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("problems %q, want one containing %q", got, c.want)
			}
		})
	}
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
