package diagnosis

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

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
	if match {
		return nil
	}
	se := &ScopeError{Scope: e.scope, Start: e.start, End: e.end}
	if e.scope.Endpoint != "" && !endpoints[e.scope.Endpoint] {
		se.Scope.InferenceComponent, se.WithData = "", names(endpoints)
	} else {
		se.WithData = names(ics)
	}
	return se
}

// ScopeError is a scope whose endpoint or inference component has no data in the range: a
// misspelt name, or the wrong account, region or time.
type ScopeError struct {
	// Scope is what has no data: the endpoint alone when it has none, else the IC on it.
	Scope      Scope
	Start, End time.Time
	WithData   []string // the endpoints (or the endpoint's ICs) that do have data, sorted
}

func (e *ScopeError) Error() string {
	with := "none"
	if len(e.WithData) > 0 {
		with = strings.Join(e.WithData, ", ")
	}
	span := e.Start.UTC().Format("2006-01-02 15:04") + " and " + e.End.UTC().Format("2006-01-02 15:04 MST")
	if e.Scope.InferenceComponent == "" {
		return fmt.Sprintf("diagnosis: endpoint %q has no data between %s; endpoints with data: %s", e.Scope.Endpoint, span, with)
	}
	where := ""
	if e.Scope.Endpoint != "" {
		where = " on endpoint " + e.Scope.Endpoint
	}
	return fmt.Sprintf("diagnosis: inference component %q has no data%s between %s; inference components with data%s: %s", e.Scope.InferenceComponent, where, span, where, with)
}

// names are the members of set, sorted.
func names(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
