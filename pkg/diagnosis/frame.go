package diagnosis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Frame turns a report into the table the Performance dashboard shows at its top: one row per
// finding in rank order, then one per rule that could not be evaluated (with the reason), so
// a failed rule is never silently missing. The cause cell links to the panel holding the
// evidence. A report of named regions gets a region column; one of several regions names the
// region in each cause and summary too, as rows of different regions can otherwise read alike.
// A report with tagged findings gets a tags column after the scope.
func Frame(r Report) *data.Frame {
	names := []string{"severity", "cause", "scope", "summary", "evidence", "next step", "link"}
	withRegion, many := len(r.Regions) > 0, len(r.Regions) > 1
	withTags := slices.ContainsFunc(r.Findings, func(f Finding) bool { return len(f.Tags) > 0 })
	if withTags {
		names = slices.Insert(names, 3, "tags")
	}
	if withRegion {
		names = slices.Insert(names, 2, "region")
	}
	cols := map[string][]string{}
	add := func(region, tags string, row ...string) {
		if withTags {
			row = slices.Insert(row, 3, tags)
		}
		if withRegion {
			row = slices.Insert(row, 2, region)
		}
		for i, c := range names {
			cols[c] = append(cols[c], row[i])
		}
	}
	for _, f := range r.Findings {
		cause, summary := f.Cause, f.Summary
		if many {
			cause, summary = cause+" ("+f.Region+")", f.Region+": "+summary
		}
		add(f.Region, semconv.TagsText(f.Tags), f.Severity.String(), cause, f.Target.String(), summary, evidenceText(f.Evidence), f.Next, f.PanelLink)
	}
	queries := []string{evidenceQueries(r.Findings)}
	for _, f := range r.Failures {
		d := f.describe(many)
		add(f.Region, "", "unknown", strings.ToUpper(d[:1])+d[1:], r.Scope.String(), f.Error, "", "Retry; if it persists, run the failed query from the query inspector.", failureLink(f, r.Scope, r.Start, r.End))
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
	// The row's link sets its own scope; the dashboard's ad-hoc filters go along. Every row has
	// a link (failures too, failureLink): an empty one would leave "&var-Filters=…", no page.
	fields[2].Config = &data.FieldConfig{Links: []data.DataLink{{Title: "Open the panel with the evidence", URL: "${__data.fields.link}&" + dashref.FiltersParam}}}
	fr := data.NewFrame("diagnosis", fields...)
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable, ExecutedQueryString: strings.TrimSpace(strings.Join(queries, "\n"))}
	return fr
}

// describe says what could not be evaluated: "rule kv-cache-saturation could not be evaluated"
// (with " in <region>" among several regions), or "region us-west-2 could not be evaluated"
// when a whole region failed.
func (f RuleFailure) describe(many bool) string {
	switch {
	case f.Rule == "":
		return "region " + f.Region + " " + NotEvaluated
	case many && f.Region != "":
		return "rule " + f.Rule + " " + NotEvaluated + " in " + f.Region
	}
	return "rule " + f.Rule + " " + NotEvaluated
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
	if err := querymodel.CheckLen("diagnosis query: "+field, v, querymodel.MaxNameBytes); err != nil {
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

// endpointList reads a diagnosis query's endpoint: one scope value, or a list of plain names
// "a,b" (what an ad-hoc filter on a resource tag leaves: the tag's endpoints).
func endpointList(v string) ([]string, error) {
	if !strings.Contains(v, ",") || strings.ContainsAny(v, "{}|()") {
		one, err := scopeValue("endpoint", v)
		if one == "" {
			return nil, err
		}
		return []string{one}, err
	}
	var out []string
	for _, part := range strings.Split(v, ",") {
		name, err := scopeValue("endpoint", part)
		if err != nil || name == "" || strings.HasPrefix(strings.TrimSpace(part), "$") {
			return nil, fmt.Errorf("diagnosis query: endpoint %q is not a list of endpoint names; write names separated by commas, one endpoint, or All", v)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// runEndpoints diagnoses each endpoint as its own scope and ranks the findings together, so
// a list of endpoints is diagnosed as each alone would be. A failure of the same rule with
// the same error in several endpoints is one row.
func runEndpoints(ctx context.Context, regions []Region, endpoints []string, ic string, start, end time.Time) (Report, error) {
	out := Report{Scope: Scope{Endpoint: strings.Join(endpoints, ", "), InferenceComponent: ic}, Start: start, End: end, Findings: []Finding{}}
	seen := map[string]bool{}
	once := func(key string) bool {
		dup := seen[key]
		seen[key] = true
		return !dup
	}
	for _, ep := range endpoints {
		r, err := RunRegions(ctx, regions, Scope{Endpoint: ep, InferenceComponent: ic}, start, end, DefaultConfig())
		if err != nil {
			return Report{}, err
		}
		out.Regions, out.Ran = r.Regions, max(out.Ran, r.Ran)
		out.Findings = append(out.Findings, r.Findings...)
		for _, f := range r.Failures {
			if once("failure\x00" + f.Region + "\x00" + f.Rule + "\x00" + f.Error) {
				out.Failures = append(out.Failures, f)
			}
		}
		for _, w := range r.Warnings {
			if once("warning\x00" + w) {
				out.Warnings = append(out.Warnings, w)
			}
		}
		out.Requests += r.Requests
		out.answered = max(out.answered, r.answered)
	}
	Rank(out.Findings)
	return out, nil
}

// HandleQuery answers a `diagnosis` query of the datasource: it reads the scope from the
// query JSON ({"endpoint": ..., "inferenceComponent": ...}; the endpoint may be a list of
// names, each diagnosed alone, see runEndpoints), runs every rule with the default
// thresholds over the query's time range and returns the ranked findings as one table frame.
// Rules that could not be evaluated become rows and warnings on the frame; when none could
// run, the response carries the first failure, typed, for the datasource's edge to explain (a
// CloudWatch 403 stays a 403). Input errors are downstream errors. explain words a rule's
// failure with its fix for the row and the notice, as the datasource words a panel's error
// (pkg/fault.Explain with the region's endpoint); nil shows the error as it is.
// regions are those the query names, each with its querier (RunRegions); one Region with an
// empty name when it names none.
func HandleQuery(ctx context.Context, regions []Region, query backend.DataQuery, explain func(region string, err error) string) backend.DataResponse {
	var m diagnosisQuery
	if len(query.JSON) > 0 {
		if err := json.Unmarshal(query.JSON, &m); err != nil {
			return InvalidQuery(err)
		}
	}
	return HandleScope(ctx, regions, query, m.Endpoint, m.InferenceComponent, explain)
}

// InvalidQuery is the answer to a diagnosis query whose JSON could not be read.
func InvalidQuery(err error) backend.DataResponse {
	return backend.DataResponse{Error: backend.DownstreamErrorf("diagnosis query: the query JSON is invalid (%v); send {\"endpoint\": \"...\", \"inferenceComponent\": \"...\"}", err)}
}

// HandleScope is HandleQuery for a scope already read from the query's JSON (the plugin
// decodes a query's JSON once), endpoint and component as written.
func HandleScope(ctx context.Context, regions []Region, query backend.DataQuery, endpoint, component string, explain func(region string, err error) string) backend.DataResponse {
	var scope Scope
	endpoints, err := endpointList(endpoint)
	if err != nil {
		return backend.DataResponse{Error: backend.DownstreamError(err)}
	}
	if scope.InferenceComponent, err = scopeValue("inference component", component); err != nil {
		return backend.DataResponse{Error: backend.DownstreamError(err)}
	}
	var r Report
	if len(endpoints) > 1 {
		r, err = runEndpoints(ctx, regions, endpoints, scope.InferenceComponent, query.TimeRange.From, query.TimeRange.To)
		scope = r.Scope
	} else {
		scope.Endpoint = strings.Join(endpoints, "")
		r, err = RunRegions(ctx, regions, scope, query.TimeRange.From, query.TimeRange.To, DefaultConfig())
	}
	if err != nil {
		return backend.DataResponse{Error: backend.DownstreamError(err)}
	}
	addTags(ctx, regions, &r)
	if r.answered == 0 && len(r.Failures) > 0 {
		return backend.DataResponse{Error: fmt.Errorf("diagnosis: no rule could query the data source: %w", inRegion(r.Failures[0].Region, r.Failures[0].Err))}
	}
	for i, f := range r.Failures {
		if explain != nil && f.Err != nil {
			r.Failures[i].Error = explain(f.Region, f.Err)
		}
	}
	fr := Frame(r)
	fr.RefID = query.RefID
	for _, w := range r.Warnings {
		fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning, Text: w})
	}
	for _, f := range r.Failures {
		fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityWarning, Text: f.describe(len(r.Regions) > 1) + ": " + f.Error})
	}
	where := scope.String()
	if len(r.Regions) > 0 {
		where += " in " + strings.Join(r.Regions, ", ")
	}
	fr.AppendNotices(data.Notice{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf("%d findings over %s from %d CloudWatch requests", len(r.Findings), where, r.Requests)})
	return backend.DataResponse{Frames: data.Frames{fr}}
}
