package models

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Bounds of a name filter: SageMaker names are at most 63 characters, and a dashboard
// variable with every value selected is sent as "All" rather than a list.
const (
	maxSageMakerName = 63
	MaxFilterNames   = 200
)

// sageMakerName is the shape SageMaker gives endpoint and inference component names, which is
// why "," can join several of them.
var sageMakerName = regexp.MustCompile(`^[a-zA-Z0-9](-*[a-zA-Z0-9])*$`)

// HealthQuery is an `alarms`, `alarmHistory` or `inventory` query.
type HealthQuery struct {
	RefID, QueryType string
	// Endpoints and Components filter the resources; nil means any.
	Endpoints, Components []string
	// ThresholdFallback (alarms): resources without an alarm get a state from the engine
	// thresholds through PromQL.
	ThresholdFallback bool
	Format            string // FormatTable or FormatAnnotations (alarmHistory, inventory)
	Region            string // the region field as written; ParseRegions reads it
	TimeRange         backend.TimeRange
}

// ParseHealthQuery decodes a query of type qt (one of alarms, alarmHistory, inventory).
// Errors name the field and the fix.
func ParseHealthQuery(dq backend.DataQuery, qt string) (*HealthQuery, error) {
	return Decode(dq).Health(qt)
}

// Health reads the model as a query of type qt (ParseHealthQuery).
func (m *Model) Health(qt string) (*HealthQuery, error) {
	dq, raw := m.dq, &m.raw
	ref := refName(dq.RefID)
	if m.err != nil {
		return nil, m.notObject()
	}
	q := &HealthQuery{RefID: dq.RefID, QueryType: qt, TimeRange: dq.TimeRange, Format: FormatTable}
	var errs []error
	field := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("query %s: field %q %w", ref, name, err))
		}
	}
	ep, err := stringField(raw.Endpoint)
	field("endpoint", err)
	ic, err := stringField(raw.InferenceComponent)
	field("inferenceComponent", err)
	q.ThresholdFallback, err = boolField(raw.ThresholdFallback)
	field("thresholdFallback", err)
	format, err := stringField(raw.Format)
	field("format", err)
	if q.Region, err = regionField(dq.RefID, raw.Region); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if q.Endpoints, err = ParseNames(ep); err != nil {
		return nil, fmt.Errorf("query %s: field \"endpoint\": %w", ref, err)
	}
	if q.Components, err = ParseNames(ic); err != nil {
		return nil, fmt.Errorf("query %s: field \"inferenceComponent\": %w", ref, err)
	}
	// An alarms query is always a table; a format left over from another type is ignored.
	if qt != QueryTypeAlarms {
		switch f := strings.TrimSpace(format); f {
		case "", FormatTable:
		case FormatAnnotations:
			q.Format = f
		default:
			return nil, fmt.Errorf("query %s: field \"format\" %q is unknown: use %q (default) or %q", ref, truncateForMessage(f), FormatTable, FormatAnnotations)
		}
	}
	if err := CheckTimeRange(q.RefID, q.TimeRange); err != nil {
		return nil, err
	}
	return q, nil
}

// ParseNames reads a name filter as a dashboard interpolates it: "", "All", "$__all" and
// the usual all-values forms mean any (nil); several names are joined by ",". A variable the
// dashboard does not define ("$endpoint" left as it is) means any, as in diagnosis queries.
// Names must be SageMaker names.
func ParseNames(v string) ([]string, error) {
	if err := CheckLen("the filter", v, MaxNameBytes); err != nil {
		return nil, err
	}
	v = strings.TrimSpace(v)
	switch v {
	case "", "All", "$__all", ".*", ".+", "*":
		return nil, nil
	}
	if strings.HasPrefix(v, "$") {
		return nil, nil
	}
	// Grafana's "{a,b}" glob format of multi-value variables.
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		v = v[1 : len(v)-1]
	}
	parts := strings.Split(v, ",")
	if len(parts) > MaxFilterNames {
		return nil, fmt.Errorf("%d names are more than the %d accepted: select All or fewer values", len(parts), MaxFilterNames)
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			continue
		case len(p) > maxSageMakerName || !sageMakerName.MatchString(p):
			return nil, fmt.Errorf("%q is not a SageMaker name (letters, digits and inner hyphens, at most %d characters): "+
				"select values of the endpoint or inference component variable, joined by \",\"", truncateForMessage(p), maxSageMakerName)
		case !seen[p]:
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}
