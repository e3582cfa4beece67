package diagnosis

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// Frame turns a report into the table the Performance dashboard shows at its top: one row per
// finding in rank order, then one per rule that could not be evaluated (with the reason), so
// a failed rule is never silently missing. The cause cell links to the panel holding the
// evidence.
func Frame(r Report) *data.Frame {
	names := []string{"severity", "cause", "scope", "summary", "evidence", "next step", "link"}
	cols := map[string][]string{}
	add := func(row ...string) {
		for i, c := range names {
			cols[c] = append(cols[c], row[i])
		}
	}
	for _, f := range r.Findings {
		add(f.Severity.String(), f.Cause, f.Target.String(), f.Summary, evidenceText(f.Evidence), f.Next, f.PanelLink)
	}
	queries := []string{evidenceQueries(r.Findings)}
	for _, f := range r.Failures {
		add("unknown", "Rule "+f.Rule+" "+NotEvaluated, r.Scope.String(), f.Error, "", "Retry; if it persists, run the failed query from the query inspector.", "")
		if f.Query != "" {
			queries = append(queries, f.Query)
		}
	}
	rank := make([]int64, len(cols["cause"]))
	for i := range rank {
		rank[i] = int64(i + 1)
	}
	fields := []*data.Field{data.NewField("rank", nil, rank)}
	for _, c := range names {
		fields = append(fields, data.NewField(c, nil, append([]string{}, cols[c]...)))
	}
	fields[2].Config = &data.FieldConfig{Links: []data.DataLink{{Title: "Open the panel with the evidence", URL: "${__data.fields.link}"}}}
	fr := data.NewFrame("diagnosis", fields...)
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, ExecutedQueryString: strings.TrimSpace(strings.Join(queries, "\n"))}
	return fr
}

// NotEvaluated is how a rule that failed is shown, with its reason.
const NotEvaluated = "could not be evaluated"

// evidenceText is the evidence of one finding on one line.
func evidenceText(ev []Evidence) string {
	parts := make([]string, len(ev))
	for i, e := range ev {
		parts[i] = e.What + ": " + e.Value
	}
	return strings.Join(parts, "; ")
}

// evidenceQueries lists the distinct PromQL behind the findings, for the query inspector.
func evidenceQueries(findings []Finding) string {
	seen := map[string]bool{}
	var out []string
	for _, f := range findings {
		for _, e := range f.Evidence {
			if e.Query != "" && !seen[e.Query] {
				seen[e.Query] = true
				out = append(out, e.Query)
			}
		}
	}
	return strings.Join(out, "\n")
}

// diagnosisQuery is the JSON model of a `diagnosis` query.
type diagnosisQuery struct {
	Endpoint           string `json:"endpoint"`
	InferenceComponent string `json:"inferenceComponent"`
}

// scopeValue maps what a dashboard variable interpolates to: "All" and the usual all-values
// forms mean no filter; a multi-value selection cannot be one scope.
func scopeValue(field, v string) (string, error) {
	if err := models.CheckLen("diagnosis query: "+field, v, models.MaxNameBytes); err != nil {
		return "", err
	}
	v = strings.TrimSpace(v)
	switch v {
	case "", "All", "$__all", ".*", ".+", "*":
		return "", nil
	}
	if strings.HasPrefix(v, "$") { // a variable the dashboard does not define
		return "", nil
	}
	if strings.ContainsAny(v, "{}|,()") {
		return "", fmt.Errorf("diagnosis query: %s %q selects several values; diagnosis runs on one %s or on All", field, v, field)
	}
	return v, nil
}

// HandleQuery answers a `diagnosis` query of the datasource: it reads the scope from the
// query JSON ({"endpoint": ..., "inferenceComponent": ...}), runs every rule with the default
// thresholds over the query's time range and returns the ranked findings as one table frame.
// Rules that could not be evaluated become rows and warnings on the frame; when none could
// run, the response carries the first failure, typed, for the datasource's edge to explain (a
// CloudWatch 403 stays a 403). Input errors are downstream errors. explain words a rule's
// failure with its fix for the row and the notice, as the datasource words a panel's error
// (pkg/fault.Explain with its endpoint and region); nil shows the error as it is.
func HandleQuery(ctx context.Context, q Querier, query backend.DataQuery, explain func(error) string) backend.DataResponse {
	var m diagnosisQuery
	if len(query.JSON) > 0 {
		if err := json.Unmarshal(query.JSON, &m); err != nil {
			return backend.DataResponse{Error: backend.DownstreamErrorf("diagnosis query: the query JSON is invalid (%v); send {\"endpoint\": \"...\", \"inferenceComponent\": \"...\"}", err)}
		}
	}
	var scope Scope
	var err error
	if scope.Endpoint, err = scopeValue("endpoint", m.Endpoint); err != nil {
		return backend.DataResponse{Error: backend.DownstreamError(err)}
	}
	if scope.InferenceComponent, err = scopeValue("inference component", m.InferenceComponent); err != nil {
		return backend.DataResponse{Error: backend.DownstreamError(err)}
	}
	r, err := Run(ctx, q, scope, query.TimeRange.From, query.TimeRange.To, DefaultConfig())
	if err != nil {
		return backend.DataResponse{Error: backend.DownstreamError(err)}
	}
	if len(r.Failures) > 0 && len(r.Failures) == len(allRules) {
		return backend.DataResponse{Error: fmt.Errorf("diagnosis: no rule could query the data source: %w", r.Failures[0].Err)}
	}
	for i, f := range r.Failures {
		if explain != nil && f.Err != nil {
			r.Failures[i].Error = explain(f.Err)
		}
	}
	fr := Frame(r)
	fr.RefID = query.RefID
	for _, w := range r.Warnings {
		fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning, Text: w})
	}
	for _, f := range r.Failures {
		fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning, Text: "rule " + f.Rule + " " + NotEvaluated + ": " + f.Error})
	}
	fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf("%d findings over %s from %d CloudWatch requests", len(r.Findings), scope, r.Requests)})
	return backend.DataResponse{Frames: data.Frames{fr}}
}
