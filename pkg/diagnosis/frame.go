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

// Frame turns findings into the table the Performance dashboard shows at its top: one row per
// finding in rank order. The cause cell links to the panel holding the evidence.
func Frame(findings []Finding) *data.Frame {
	n := len(findings)
	rank := make([]int64, n)
	cols := map[string][]string{}
	names := []string{"severity", "cause", "scope", "summary", "evidence", "next step", "link"}
	for _, c := range names {
		cols[c] = make([]string, n)
	}
	for i, f := range findings {
		rank[i] = int64(i + 1)
		cols["severity"][i] = f.Severity.String()
		cols["cause"][i] = f.Cause
		cols["scope"][i] = f.Target.String()
		cols["summary"][i] = f.Summary
		cols["evidence"][i] = evidenceText(f.Evidence)
		cols["next step"][i] = f.Next
		cols["link"][i] = f.PanelLink
	}
	fields := []*data.Field{data.NewField("rank", nil, rank)}
	for _, c := range names {
		fields = append(fields, data.NewField(c, nil, cols[c]))
	}
	fields[2].Config = &data.FieldConfig{Links: []data.DataLink{{Title: "Open the panel with the evidence", URL: "${__data.fields.link}"}}}
	fr := data.NewFrame("diagnosis", fields...)
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, ExecutedQueryString: evidenceQueries(findings)}
	return fr
}

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
// Rules that could not run become warnings on the frame; when none could run, the response
// carries the first failure, typed, for the datasource's edge to explain (a CloudWatch 403
// stays a 403). Input errors are downstream errors.
func HandleQuery(ctx context.Context, q Querier, query backend.DataQuery) backend.DataResponse {
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
	fr := Frame(r.Findings)
	fr.RefID = query.RefID
	for _, w := range r.Warnings {
		fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning, Text: w})
	}
	for _, f := range r.Failures {
		fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning, Text: "rule " + f.Rule + " did not run: " + f.Error})
	}
	fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf("%d findings over %s from %d CloudWatch requests", len(r.Findings), scope, r.Requests)})
	return backend.DataResponse{Frames: data.Frames{fr}}
}
