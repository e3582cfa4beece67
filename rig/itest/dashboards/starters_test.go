package dashboards_test

import (
	"math"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/sagemaker-datasource/pkg/starters"
	"github.com/inferscope/sagemaker-datasource/rig/dashload"
	"github.com/inferscope/sagemaker-datasource/rig/itest/cwcheck"
)

// The query editor's starter queries pass the checks every dashboard query passes.
func TestStartersObeyCloudWatchRules(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	for _, s := range starters.List() {
		t.Run(s.Title, func(t *testing.T) {
			ast, err := p.ParseExpr(dashload.Interpolate(s.Expr, builtinSamples))
			if err != nil {
				t.Fatalf("parse: %v\n%s", err, s.Expr)
			}
			for _, problem := range cwcheck.Problems(ast) {
				t.Errorf("%s\n%s", problem, s.Expr)
			}
		})
	}
}

// Each starter answers with series from the healthy fleet through the plugin, so a click on
// one in an empty editor shows data.
func TestStartersReturnSeries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator with a simulated fleet")
	}
	f := startFleet(t, "healthy")
	for _, s := range starters.List() {
		t.Run(s.Title, func(t *testing.T) {
			r := f.query(t, map[string]any{"refId": "A", "expr": s.Expr, "range": true})
			if len(r) == 0 {
				t.Errorf("no series from the healthy fleet\n%s", s.Expr)
			}
			for _, x := range r {
				if math.IsNaN(x.last) {
					t.Errorf("series %v has no values\n%s", x.labels, s.Expr)
				}
			}
		})
	}
}
