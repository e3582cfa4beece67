package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Formats of the alarmHistory and inventory queries.
const (
	FormatTable       = "table"
	FormatAnnotations = "annotations"
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

// PluginQuery is the stored model of a diagnosis, alarms, alarmHistory or inventory query,
// as dashboards as code write it (dashboards/builder). ParseHealthQuery reads the same keys,
// leniently, as hand-written dashboards may spell them.
type PluginQuery struct {
	RefID              string         `json:"refId"`
	QueryType          string         `json:"queryType"`
	Datasource         *DataSourceRef `json:"datasource,omitempty"`
	Region             string         `json:"region,omitempty"`
	Endpoint           string         `json:"endpoint,omitempty"`
	InferenceComponent string         `json:"inferenceComponent,omitempty"`
	ThresholdFallback  bool           `json:"thresholdFallback,omitempty"` // alarms only
	Format             string         `json:"format,omitempty"`            // alarmHistory and inventory only
	Account            string         `json:"account,omitempty"`           // cost only
	View               string         `json:"view,omitempty"`              // cost only
	GPUsPerCopy        string         `json:"gpusPerCopy,omitempty"`       // cost view "fit" only
}

// DataSourceRef names the data source a stored query runs on.
type DataSourceRef struct {
	Type string `json:"type,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Check refuses a model that does not say what it means: no refId, a type that is PromQL or
// unknown, or a field its type ignores.
func (q PluginQuery) Check() error {
	ref := refName(q.RefID)
	switch {
	case q.RefID == "":
		return errors.New("plugin query: refId is empty; set one so the panel's result is addressable")
	case q.QueryType != QueryTypeDiagnosis && q.QueryType != QueryTypeAlarms && q.QueryType != QueryTypeAlarmHistory && q.QueryType != QueryTypeInventory && q.QueryType != QueryTypeCost:
		return fmt.Errorf("query %s: queryType %q is not diagnosis, alarms, alarmHistory, inventory or cost", ref, q.QueryType)
	case q.ThresholdFallback && q.QueryType != QueryTypeAlarms:
		return fmt.Errorf("query %s: thresholdFallback applies to alarms queries only", ref)
	case (q.View != "" || q.Account != "") && q.QueryType != QueryTypeCost:
		return fmt.Errorf("query %s: view and account apply to cost queries only", ref)
	case q.QueryType == QueryTypeCost && !slices.Contains(CostViews, q.View):
		return fmt.Errorf("query %s: view %q is not one of %s", ref, q.View, strings.Join(CostViews, ", "))
	case q.GPUsPerCopy != "" && q.View != CostViewFit:
		return fmt.Errorf("query %s: gpusPerCopy applies to the cost view %q only", ref, CostViewFit)
	}
	switch q.Format {
	case "":
	case FormatTable, FormatAnnotations:
		if q.QueryType != QueryTypeAlarmHistory && q.QueryType != QueryTypeInventory {
			return fmt.Errorf("query %s: format applies to alarmHistory and inventory queries only", ref)
		}
	default:
		return fmt.Errorf("query %s: format %q is neither %q nor %q", ref, q.Format, FormatTable, FormatAnnotations)
	}
	return nil
}

type rawHealthQuery struct {
	Endpoint           json.RawMessage `json:"endpoint"`
	InferenceComponent json.RawMessage `json:"inferenceComponent"`
	ThresholdFallback  json.RawMessage `json:"thresholdFallback"`
	Format             json.RawMessage `json:"format"`
	Region             json.RawMessage `json:"region"`
}

// ParseHealthQuery decodes a query of type qt (one of alarms, alarmHistory, inventory).
// Errors name the field and the fix.
func ParseHealthQuery(dq backend.DataQuery, qt string) (*HealthQuery, error) {
	ref := refName(dq.RefID)
	js := bytes.TrimSpace(dq.JSON)
	if len(js) == 0 || string(js) == "null" {
		js = []byte("{}")
	}
	var raw rawHealthQuery
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("query %s: the query model is not a JSON object (%s): re-save the panel or fix the dashboard JSON", ref, jsonTypeProblem(err))
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
