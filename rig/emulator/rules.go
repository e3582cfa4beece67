package emulator

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// errNoMetricName starts every rejection of a selector without an exact metric name;
// it is the text CloudWatch answers with (third-party reports, CloudWatch notes §8.2).
const errNoMetricName = "Selector must have a metric name"

// checkMetricNames enforces CloudWatch's rule that every selector in a query names its
// metric with an exact matcher. Expressions without selectors (`1+1`) pass.
func checkMetricNames(expr parser.Expr) error {
	var err error
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok && err == nil {
			err = checkSelector(vs.String(), vs.LabelMatchers)
		}
		return err
	})
	return err
}

// checkSelector applies the metric-name rule to one selector's matchers; text names the
// selector in the error.
func checkSelector(text string, ms []*labels.Matcher) error {
	named := false
	for _, m := range ms {
		if canonicalLabel(m.Name) != labels.MetricName {
			continue
		}
		switch m.Type {
		case labels.MatchRegexp, labels.MatchNotRegexp:
			return fmt.Errorf("%s: %s uses a regular expression on the metric name, which CloudWatch does not support; name one metric exactly, e.g. {\"http.server.active_requests\"}", errNoMetricName, text)
		case labels.MatchEqual:
			named = named || m.Value != ""
		}
	}
	if !named {
		return fmt.Errorf("%s: %s selects no metric by name; add one, e.g. {\"http.server.active_requests\", ...} or {__name__=\"up\", ...}", errNoMetricName, text)
	}
	return nil
}
