package diagnosis_test

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// checkSelectors fails when a vector selector lacks an exact metric name (CloudWatch rejects it).
func checkSelectors(expr string) error {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return err
	}
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		named := false
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual && m.Value != "" {
				named = true
			}
		}
		if !named && bad == nil {
			bad = fmt.Errorf("selector %s has no metric name", vs)
		}
		return nil
	})
	return bad
}
