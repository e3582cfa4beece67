package diagnosis

import (
	"context"
	"fmt"
	"sort"
	"strings"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// inventoryExpr lists the endpoints (every instance has node series) and endpoint/IC pairs
// (GPUs an IC owns carry both) with data in the range, over the whole fleet.
func (e *env) inventoryExpr() string {
	return px.Or(
		fmt.Sprintf("count %s (last_over_time(%s[%s]))", px.By(lEP, lIC), px.Sel(semconv.DCGMGPUUtil, px.Neq(lIC, "")), e.rng()),
		fmt.Sprintf("count %s (last_over_time(%s[%s]))", px.By(lEP), semconv.NodeMemTotal, e.rng()))
}

// checkScope makes sure the scope's endpoint and IC have data in the range. A misspelt name
// otherwise reads as "no likely cause found"; this names what does have data instead. When
// the inventory cannot be read, or is empty, the rules run and report on their own.
func (e *env) checkScope(ctx context.Context) error {
	if e.scope.Endpoint == "" && e.scope.InferenceComponent == "" {
		return nil
	}
	v, err := e.q.Instant(ctx, e.inventoryExpr(), e.end)
	if err != nil || len(v) == 0 {
		return nil // nothing to compare with: no node or GPU series in this account
	}
	endpoints, ics := map[string]bool{}, map[string]bool{}
	match := false
	for _, s := range v {
		ep, ic := label(s.Metric, lEP), label(s.Metric, lIC)
		if ep != "" {
			endpoints[ep] = true
		}
		if ic != "" && (e.scope.Endpoint == "" || ep == e.scope.Endpoint) {
			ics[ic] = true
		}
		if (e.scope.Endpoint == "" || ep == e.scope.Endpoint) && (e.scope.InferenceComponent == "" || ic == e.scope.InferenceComponent) {
			match = true
		}
	}
	switch {
	case match:
		return nil
	case e.scope.Endpoint != "" && !endpoints[e.scope.Endpoint]:
		return fmt.Errorf("diagnosis: endpoint %q has no data between %s and %s; endpoints with data: %s", e.scope.Endpoint, e.start.UTC().Format("2006-01-02 15:04"), e.end.UTC().Format("2006-01-02 15:04 MST"), names(endpoints))
	}
	where := ""
	if e.scope.Endpoint != "" {
		where = " on endpoint " + e.scope.Endpoint
	}
	return fmt.Errorf("diagnosis: inference component %q has no data%s between %s and %s; inference components with data%s: %s", e.scope.InferenceComponent, where, e.start.UTC().Format("2006-01-02 15:04"), e.end.UTC().Format("2006-01-02 15:04 MST"), where, names(ics))
}

func names(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
