package diagnosis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// tagsExpr returns one series per endpoint and per inference component that served in the
// last rangeSecs seconds, with every label, so their tags, on it.
func tagsExpr(rangeSecs int64) string {
	return fmt.Sprintf(`count_over_time({%q}[%ds]) or count_over_time({%q}[%ds])`, semconv.Invocations, rangeSecs, semconv.InvocationsForIC, rangeSecs)
}

// resourceTags are the tags of a region's endpoints and inference components, by name.
type resourceTags struct{ endpoints, components map[string]map[string]string }

// readTags asks a region for its resources' tags with one query over the run's range.
func readTags(ctx context.Context, q Querier, r *Report) (resourceTags, error) {
	out := resourceTags{endpoints: map[string]map[string]string{}, components: map[string]map[string]string{}}
	vec, err := q.Instant(ctx, tagsExpr(max(60, int64(r.End.Sub(r.Start).Seconds()))), r.End)
	if err != nil {
		return out, err
	}
	for _, s := range vec {
		tags := map[string]string{}
		for name, v := range s.Metric {
			if k, ok := strings.CutPrefix(string(name), semconv.LabelTagPrefix); ok && k != "" {
				tags[k] = string(v)
			}
		}
		if len(tags) == 0 {
			continue
		}
		if ic := string(s.Metric[semconv.DimInferenceComponentName]); ic != "" {
			out.components[ic] = tags
		} else if ep := string(s.Metric[semconv.DimEndpointName]); ep != "" {
			out.endpoints[ep] = tags
		}
	}
	return out, nil
}

// of is the tags of a finding's resource: its inference component's, else its endpoint's.
func (rt resourceTags) of(t Target) map[string]string {
	ic, ep := t.InferenceComponent, t.Endpoint
	if t.Level == LevelIC && ic == "" {
		ic = t.Name
	}
	if t.Level == LevelEndpoint && ep == "" {
		ep = t.Name
	}
	if tags := rt.components[ic]; ic != "" && tags != nil {
		return tags
	}
	return rt.endpoints[ep]
}

// addTags sets each finding's Tags from its region (one query per region with findings). A
// region whose tags cannot be read leaves its findings without and says so in a warning.
func addTags(ctx context.Context, regions []Region, r *Report) {
	for _, rg := range regions {
		if rg.Querier == nil || !slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Region == rg.Name }) {
			continue
		}
		rt, err := readTags(ctx, rg.Querier, r)
		r.Requests++
		if err != nil {
			where := ""
			if rg.Name != "" {
				where = " in " + rg.Name
			}
			r.Warnings = append(r.Warnings, fmt.Sprintf("resource tags could not be read%s: %v", where, err))
			continue
		}
		for i := range r.Findings {
			if r.Findings[i].Region == rg.Name {
				r.Findings[i].Tags = rt.of(r.Findings[i].Target)
			}
		}
	}
}
