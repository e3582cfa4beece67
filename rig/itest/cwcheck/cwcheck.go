// Package cwcheck finds what CloudWatch's PromQL rejects or silently mis-answers in a parsed
// query: selectors without an exact metric name, underscore spellings of dotted/@ labels
// (valid PromQL that matches nothing) and cumulative-only functions on delta metrics. The
// dashboards' and the alert rules' tests share it.
package cwcheck

import (
	"fmt"
	"strings"

	promlabels "github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

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

// Problems walks the AST for what CloudWatch rejects or silently mis-answers.
func Problems(ast parser.Expr) []string {
	under := underscoreSpellings()
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
			if sc.IsVended(name) {
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
