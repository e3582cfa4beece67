package emulator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
)

// maxAnnotations bounds warnings and infos per response, as Prometheus' API does.
const maxAnnotations = 10

// queryData is the data member of a /query or /query_range answer.
type queryData struct {
	ResultType parser.ValueType `json:"resultType"`
	Result     parser.Value     `json:"result"`
}

func (s *Server) handleQuery(r *http.Request) result {
	t, aerr := parseTime(r, "time", s.now())
	if aerr != nil {
		return result{err: aerr}
	}
	limit, aerr := parseLimit(r, s.limits.QuerySeries, s.limits.ClampLimit)
	if aerr != nil {
		return result{err: aerr}
	}
	return s.evaluate(r.Context(), r.Form.Get("query"), t, t, 0, limit)
}

func (s *Server) handleQueryRange(r *http.Request) result {
	start, aerr := parseTime(r, "start", time.Time{})
	if aerr != nil {
		return result{err: aerr}
	}
	end, aerr := parseTime(r, "end", time.Time{})
	if aerr != nil {
		return result{err: aerr}
	}
	step, aerr := parseDuration(r, "step")
	if aerr != nil {
		return result{err: aerr}
	}
	// The three messages below are Prometheus' own wording.
	if end.Before(start) {
		return result{err: badData("end timestamp must not be before start time")}
	}
	if step <= 0 {
		return result{err: badData("zero or negative query resolution step widths are not accepted. Try a positive integer")}
	}
	if end.Sub(start)/step > time.Duration(s.limits.MaxPointsPerSeries) {
		return result{err: badData("exceeded maximum resolution of %d points per timeseries. Try decreasing the query resolution (?step=XX)", s.limits.MaxPointsPerSeries)}
	}
	limit, aerr := parseLimit(r, s.limits.QuerySeries, s.limits.ClampLimit)
	if aerr != nil {
		return result{err: aerr}
	}
	return s.evaluate(r.Context(), r.Form.Get("query"), start, end, step, limit)
}

// evaluate checks qs against CloudWatch's rules and runs it; step 0 is an instant query.
func (s *Server) evaluate(ctx context.Context, qs string, start, end time.Time, step time.Duration, limit int) result {
	if strings.TrimSpace(qs) == "" {
		return result{err: badData("missing parameter \"query\": give a PromQL expression")}
	}
	expr, err := s.parser.ParseExpr(qs)
	if err != nil {
		return result{err: badData("invalid parameter \"query\": %v", err)}
	}
	if err := checkMetricNames(expr); err != nil {
		return result{err: badData("%v", err)}
	}
	days, aerr := s.checkRange(expr, start, end, step)
	if aerr != nil {
		return result{err: aerr}
	}

	opts := promql.NewPrometheusQueryOptsWithLimits(false, 0, perDay(s.limits.SeriesScannedPerDay, days), perDay(s.limits.SamplesScannedPerDay, days), 0, nil)
	var q promql.Query
	if step == 0 {
		q, err = s.engine.NewInstantQuery(ctx, s.db, opts, qs, start)
	} else {
		q, err = s.engine.NewRangeQuery(ctx, s.db, opts, qs, start, end, step)
	}
	if err != nil {
		// Preparing the query already runs under the execution deadline.
		var timeout promql.ErrQueryTimeout
		var canceled promql.ErrQueryCanceled
		if errors.As(err, &timeout) || errors.As(err, &canceled) {
			return result{err: s.engineError(err, days)}
		}
		return result{err: badData("invalid parameter \"query\": %v", err)}
	}
	res := q.Exec(ctx)
	if res.Err != nil {
		q.Close()
		return result{err: s.engineError(res.Err, days)}
	}
	warnings, infos := res.Warnings.AsStrings(qs, maxAnnotations, maxAnnotations)
	value, truncated := truncateResult(res.Value, limit)
	if truncated {
		warnings = append(warnings, truncationWarning(limit, "series"))
	}
	// The engine recycles result memory on Close, so it must wait until the body is written.
	return result{data: queryData{ResultType: value.Type(), Result: value}, warnings: warnings, infos: infos, done: q.Close}
}

// checkRange enforces CloudWatch's cap on the time a query reads, which counts
// range-selector windows, offsets and the lookback delta as well as end-start. It
// returns how many started 24 h windows that time spans, the unit of the scan caps.
func (s *Server) checkRange(expr parser.Expr, start, end time.Time, step time.Duration) (uint64, *apiError) {
	pre, err := promql.PreprocessExpr(expr, start, end, step)
	if err != nil {
		return 0, badData("invalid parameter \"query\": %v", err)
	}
	mint, maxt := promql.FindMinMaxTime(&parser.EvalStmt{Expr: pre, Start: start, End: end, Interval: step, LookbackDelta: s.limits.LookbackDelta})
	if mint == 0 && maxt == 0 {
		return 1, nil // no selectors
	}
	// Float arithmetic: @ modifiers can put the bounds far enough apart to overflow int64.
	spanMs := float64(maxt) - float64(mint)
	if spanMs > float64(s.limits.MaxRange.Milliseconds()) {
		return 0, newAPIError(http.StatusUnprocessableEntity, errExecution,
			"query time range exceeds the maximum of %s: it reads %s of data (end minus start, plus range-selector windows, offsets and the %s lookback); shorten the time range or the range selectors",
			spanText(float64(s.limits.MaxRange.Milliseconds())), spanText(spanMs), spanText(float64(s.limits.LookbackDelta.Milliseconds())))
	}
	return uint64(max(1, math.Ceil(spanMs/float64(24*time.Hour/time.Millisecond)))), nil
}

// perDay scales a per-24 h cap to the days a query reads; 0 (no cap) when off.
func perDay(capPerDay int64, days uint64) uint64 {
	if capPerDay <= 0 {
		return 0
	}
	return uint64(capPerDay) * days
}

// spanText renders a span in milliseconds as days plus a Prometheus duration ("7d5m");
// model.Duration alone would say "1w" and overflow past ~292 years.
func spanText(ms float64) string {
	const dayMs = float64(24 * time.Hour / time.Millisecond)
	days := math.Floor(ms / dayMs)
	rest := time.Duration(ms-days*dayMs) * time.Millisecond
	out := ""
	if days > 0 {
		out = fmt.Sprintf("%.0fd", days)
	}
	if rest > 0 || out == "" {
		out += model.Duration(rest).String()
	}
	return out
}

// engineError maps engine failures to CloudWatch's statuses: its execution-time cap
// answers 422, not Prometheus' 503, and so do its scan caps.
func (s *Server) engineError(err error, days uint64) *apiError {
	var (
		timeout  promql.ErrQueryTimeout
		canceled promql.ErrQueryCanceled
		storage  promql.ErrStorage
		series   promql.ErrTooManySeries
		samples  promql.ErrTooManySamplesRead
	)
	const status = http.StatusUnprocessableEntity
	switch {
	case errors.As(err, &timeout):
		return newAPIError(status, errExecution, "%v: the query ran longer than the %s execution limit; narrow the time range or the series it selects", err, s.limits.Timeout)
	case errors.As(err, &series):
		return newAPIError(status, errExecution, "%v: the query scans more than %d series (%d per 24 h of data read); add matchers or shorten the time range", err, perDay(s.limits.SeriesScannedPerDay, days), s.limits.SeriesScannedPerDay)
	case errors.As(err, &samples):
		return newAPIError(status, errExecution, "%v: the query scans more than %d samples (%d per 24 h of data read); add matchers, shorten the range selectors or raise the step", err, perDay(s.limits.SamplesScannedPerDay, days), s.limits.SamplesScannedPerDay)
	case errors.As(err, &canceled):
		return newAPIError(499, errCanceled, "%v", err)
	case errors.As(err, &storage):
		return newAPIError(http.StatusInternalServerError, errInternal, "%v", err)
	default:
		return newAPIError(status, errExecution, "%v", err)
	}
}

// truncateResult caps the number of series in a result, and turns nil results into
// empty ones so that they encode as [] rather than null.
func truncateResult(v parser.Value, limit int) (parser.Value, bool) {
	switch v := v.(type) {
	case promql.Vector:
		if v == nil {
			return promql.Vector{}, false
		}
		if len(v) > limit {
			return v[:limit], true
		}
	case promql.Matrix:
		if v == nil {
			return promql.Matrix{}, false
		}
		if len(v) > limit {
			return v[:limit], true
		}
	}
	return v, false
}
