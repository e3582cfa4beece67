package emulator

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// parseRange reads start and end; /series requires both (unlike Prometheus), the label
// routes default to all of storage.
func parseRange(r *http.Request, required bool) (start, end time.Time, aerr *apiError) {
	defStart, defEnd := minTime, maxTime
	if required {
		defStart, defEnd = time.Time{}, time.Time{}
	}
	if start, aerr = parseTime(r, "start", defStart); aerr != nil {
		return start, end, aerr
	}
	if end, aerr = parseTime(r, "end", defEnd); aerr != nil {
		return start, end, aerr
	}
	if end.Before(start) {
		return start, end, badData("end timestamp must not be before start time")
	}
	return start, end, nil
}

// parseMatchers parses match[] selectors; nameRequired applies CloudWatch's metric-name
// rule (GetSeries requires it, GetLabels does not say so).
func (s *Server) parseMatchers(selectors []string, nameRequired bool) ([][]*labels.Matcher, *apiError) {
	sets := make([][]*labels.Matcher, 0, len(selectors))
	for _, sel := range selectors {
		ms, err := s.parser.ParseMetricSelector(sel)
		if err != nil {
			return nil, badData("invalid parameter \"match[]\": %v", err)
		}
		if nameRequired {
			if err := checkSelector(sel, ms); err != nil {
				return nil, badData("%v", err)
			}
		}
		sets = append(sets, ms)
	}
	return sets, nil
}

// discoveryPrologue reads what every discovery route shares.
func (s *Server) discoveryPrologue(r *http.Request, nameRequired bool) (start, end time.Time, limit int, sets [][]*labels.Matcher, aerr *apiError) {
	if start, end, aerr = parseRange(r, nameRequired); aerr != nil {
		return
	}
	if limit, aerr = parseLimit(r, s.limits.DiscoverySeries, s.limits.ClampLimit); aerr != nil {
		return
	}
	sets, aerr = s.parseMatchers(r.Form["match[]"], nameRequired)
	return
}

func (s *Server) querier(start, end time.Time) (storage.Querier, *apiError) {
	q, err := s.db.Querier(start.UnixMilli(), end.UnixMilli())
	if err != nil {
		return nil, newAPIError(http.StatusInternalServerError, errInternal, "opening storage: %v", err)
	}
	return q, nil
}

func (s *Server) handleSeries(r *http.Request) result {
	if len(r.Form["match[]"]) == 0 {
		return result{err: badData("no match[] parameter provided: /api/v1/series needs at least one selector that names a metric, e.g. match[]={\"http.server.active_requests\"}")}
	}
	start, end, limit, sets, aerr := s.discoveryPrologue(r, true)
	if aerr != nil {
		return result{err: aerr}
	}
	q, aerr := s.querier(start, end)
	if aerr != nil {
		return result{err: aerr}
	}
	defer q.Close()

	hints := &storage.SelectHints{Start: start.UnixMilli(), End: end.UnixMilli(), Func: "series", Limit: limit + 1}
	sss := make([]storage.SeriesSet, 0, len(sets))
	for _, ms := range sets {
		// Merging several sets needs each sorted.
		sss = append(sss, q.Select(r.Context(), len(sets) > 1, hints, ms...))
	}
	set := storage.NewMergeSeriesSet(sss, 0, storage.ChainedSeriesMerge)
	out := []labels.Labels{}
	truncated := false
	for set.Next() {
		if len(out) == limit {
			truncated = true
			break
		}
		out = append(out, set.At().Labels())
	}
	if err := set.Err(); err != nil {
		return result{err: newAPIError(http.StatusUnprocessableEntity, errExecution, "reading series: %v", err)}
	}
	warnings, _ := set.Warnings().AsStrings("", maxAnnotations, maxAnnotations)
	if truncated {
		warnings = append(warnings, truncationWarning(limit, "series"))
	}
	return result{data: out, warnings: warnings}
}

func (s *Server) handleLabels(r *http.Request) result {
	return s.listStrings(r, "labels", func(ctx context.Context, q storage.Querier, h *storage.LabelHints, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelNames(ctx, h, ms...)
	})
}

func (s *Server) handleLabelValues(r *http.Request, raw string) result {
	name, aerr := labelName(raw)
	if aerr != nil {
		return result{err: aerr}
	}
	if s.cfg.NameValuesDisabled && canonicalLabel(name) == labels.MetricName {
		return result{err: newAPIError(http.StatusNotFound, errNotFound, "listing metric names through /api/v1/label/%s/values is NOT supported; find metrics with /api/v1/series", raw)}
	}
	return s.listStrings(r, "label values", func(ctx context.Context, q storage.Querier, h *storage.LabelHints, ms []*labels.Matcher) ([]string, annotations.Annotations, error) {
		return q.LabelValues(ctx, name, h, ms...)
	})
}

type listFunc func(context.Context, storage.Querier, *storage.LabelHints, []*labels.Matcher) ([]string, annotations.Annotations, error)

// listStrings answers /labels and /label/<name>/values: the sorted union over the
// match[] selectors (or all series without any), capped at limit.
func (s *Server) listStrings(r *http.Request, what string, list listFunc) result {
	start, end, limit, sets, aerr := s.discoveryPrologue(r, false)
	if aerr != nil {
		return result{err: aerr}
	}
	q, aerr := s.querier(start, end)
	if aerr != nil {
		return result{err: aerr}
	}
	defer q.Close()

	if len(sets) == 0 {
		sets = [][]*labels.Matcher{nil}
	}
	// The smallest values, not any limit+1, so that the union over selectors stays exact.
	hints := &storage.LabelHints{Limit: limit + 1, LimitSmallest: true}
	var all []string
	var annots annotations.Annotations
	for _, ms := range sets {
		vals, a, err := list(r.Context(), q, hints, ms)
		if err != nil {
			return result{err: newAPIError(http.StatusUnprocessableEntity, errExecution, "reading %s: %v", what, err)}
		}
		annots.Merge(a)
		all = append(all, vals...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	if all == nil {
		all = []string{}
	}
	warnings, _ := annots.AsStrings("", maxAnnotations, maxAnnotations)
	if len(all) > limit {
		all = all[:limit]
		warnings = append(warnings, truncationWarning(limit, what))
	}
	return result{data: all, warnings: warnings}
}

// truncationWarning follows CloudWatch's documented query wording; its discovery wording
// is undocumented [I].
func truncationWarning(limit int, what string) string {
	return fmt.Sprintf("result truncated to the maximum of %d %s; refine the query or use the limit parameter", limit, what)
}
