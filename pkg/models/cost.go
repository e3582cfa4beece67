package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// maxGPUsPerCopy bounds the fit view's input: no instance has more GPUs.
const maxGPUsPerCopy = 64

// CostTagViews are the views a cost query can group by a tag: what resources spend. Prices
// and fit are per instance type, which no tag owns.
var CostTagViews = []string{CostViewSpend, CostViewTokens, CostViewIdle}

// CostQuery is a `cost` query.
type CostQuery struct {
	RefID, View string
	// Endpoints, Components and Accounts filter the fleet; nil means any.
	Endpoints, Components, Accounts []string
	GPUsPerCopy                     int    // the fit view's copy size; 1 when not given
	Region                          string // the region field as written; ParseRegions reads it
	// GroupByTag is the resource tag key (e.g. "Team") the view's rows are summed by; "" =
	// not grouped.
	GroupByTag string
	TimeRange  backend.TimeRange
}

// ParseCostQuery decodes a cost query; errors name the field and the fix.
func ParseCostQuery(dq backend.DataQuery) (*CostQuery, error) { return Decode(dq).Cost() }

// Cost reads the model as a cost query (ParseCostQuery).
func (m *Model) Cost() (*CostQuery, error) {
	dq, raw := m.dq, &m.raw
	ref := refName(dq.RefID)
	if m.err != nil {
		return nil, m.notObject()
	}
	q := &CostQuery{RefID: dq.RefID, TimeRange: dq.TimeRange, GPUsPerCopy: 1}
	var errs []error
	str := func(name string, raw json.RawMessage) string {
		v, err := stringField(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("query %s: field %q %w", ref, name, err))
		}
		return strings.TrimSpace(v)
	}
	names := func(name string, raw json.RawMessage) []string {
		v, err := ParseNames(str(name, raw))
		if err != nil {
			errs = append(errs, fmt.Errorf("query %s: field %q: %w", ref, name, err))
		}
		return v
	}
	q.Endpoints = names("endpoint", raw.Endpoint)
	q.Components = names("inferenceComponent", raw.InferenceComponent)
	q.Accounts = names("account", raw.Account)
	for _, a := range q.Accounts {
		if len(a) != 12 || strings.Trim(a, "0123456789") != "" {
			errs = append(errs, fmt.Errorf("query %s: field \"account\": %q is not an AWS account id: use 12 digits, several joined by \",\"", ref, a))
		}
	}
	q.View = str("view", raw.View)
	if q.View == "" {
		q.View = CostViewSpend
	}
	if !slices.Contains(CostViews, q.View) {
		errs = append(errs, fmt.Errorf("query %s: field \"view\" %q is unknown: use one of %s", ref, truncateForMessage(q.View), strings.Join(CostViews, ", ")))
	}
	g, isNumber := jsonNumber(raw.GPUsPerCopy) // hand-written dashboards write a number
	if !isNumber {
		g = str("gpusPerCopy", raw.GPUsPerCopy) // the editor writes text, maybe a variable
	}
	if strings.HasPrefix(g, "$") {
		// Alerting and Explore have no dashboard variables to replace it with; guessing one GPU
		// would price a different copy than the one asked about.
		errs = append(errs, fmt.Errorf("query %s: field \"gpusPerCopy\" %q is a variable nothing replaced (alerting and Explore have no dashboard variables): write the number of GPUs", ref, truncateForMessage(g)))
	} else if g != "" {
		n, err := strconv.Atoi(g)
		if err != nil || n < 1 || n > maxGPUsPerCopy {
			errs = append(errs, fmt.Errorf("query %s: field \"gpusPerCopy\" %q is not a whole number of GPUs from 1 to %d", ref, truncateForMessage(g), maxGPUsPerCopy))
		}
		q.GPUsPerCopy = n
	}
	q.GroupByTag = strings.TrimPrefix(str("groupByTag", raw.GroupByTag), sc.LabelTagPrefix)
	switch {
	case q.GroupByTag == "":
	case strings.HasPrefix(q.GroupByTag, "$"):
		errs = append(errs, fmt.Errorf("query %s: field \"groupByTag\" %q is a variable nothing replaced (alerting and Explore have no dashboard variables): write the tag key, e.g. Team", ref, truncateForMessage(q.GroupByTag)))
	case !slices.Contains(CostTagViews, q.View):
		errs = append(errs, fmt.Errorf("query %s: field \"groupByTag\" applies to the %s views, not %q: clear it or pick one of those views", ref, strings.Join(CostTagViews, ", "), q.View))
	}
	var err error
	if q.Region, err = regionField(dq.RefID, raw.Region); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := CheckTimeRange(q.RefID, q.TimeRange); err != nil {
		return nil, err
	}
	return q, nil
}
