package plugin

import (
	"context"
	"slices"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/pkg/consolelinks"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// FrameChanges names the changes query's frame.
const FrameChanges = "changes"

// runChanges answers a changes query: each region's CloudTrail changes in the range, the
// endpoint of an IC's change filled from the inventory when it is readable (an
// UpdateInferenceComponent names the IC only), filtered by endpoint, IC and account, as a
// table with console links or as annotations.
func (d *Datasource) runChanges(ctx context.Context, m *models.Model) backend.DataResponse {
	q, err := m.Changes()
	if err != nil {
		return problemResponse(refused(backend.DownstreamError(err)))
	}
	regions, err := d.regionsOf(q.RefID, q.Region)
	if err != nil {
		return problemResponse(refused(err))
	}
	parts := forRegions(ctx, d, q.RefID, regions, func(ctx context.Context, rg *regional) ([]changes.Change, error) {
		if rg.changes == nil {
			return nil, rg.changesErr
		}
		l, err := rg.changes.Changes(ctx, awsapi.ChangeQuery{From: q.TimeRange.From, To: q.TimeRange.To})
		if err != nil {
			return nil, err
		}
		if rg.aws != nil {
			if inv, err := rg.aws.Inventory(ctx); err == nil { // without it, IC changes keep the endpoint their event names
				changes.FillEndpoints(l.Changes, endpointOf(inv))
			}
		}
		return l.Changes, nil
	})
	var cs []changes.Change
	for _, p := range parts {
		if p.failed == nil {
			cs = append(cs, p.val...)
		}
	}
	cs = slices.DeleteFunc(cs, func(c changes.Change) bool { return !keepsChange(q, c) })
	slices.SortStableFunc(cs, func(a, b changes.Change) int { return a.Time.Compare(b.Time) })
	fr := changesTable(cs, d.home.region)
	if q.Format == models.FormatAnnotations {
		fr = changesAnnotations(cs)
	}
	fr.RefID = q.RefID
	return mergeFailures(q.Region != "", parts, data.Frames{fr})
}

// endpointOf maps each IC of the inventory to its endpoint.
func endpointOf(inv awsapi.Inventory) map[string]string {
	out := map[string]string{}
	for _, ep := range inv.Endpoints {
		for _, ic := range ep.Components {
			out[ic.Name] = ep.Name
		}
	}
	return out
}

// keepsChange says whether q's filters keep c: a change of a selected endpoint (an endpoint
// config's, which belongs to no endpoint until an UpdateEndpoint uses it, only when none is
// selected); with ICs selected, their changes and their endpoints' own; of a selected account.
func keepsChange(q *models.ChangesQuery, c changes.Change) bool {
	return (len(q.Endpoints) == 0 || slices.Contains(q.Endpoints, c.Endpoint)) &&
		(len(q.Components) == 0 || c.Kind != changes.KindComponent || slices.Contains(q.Components, c.Resource)) &&
		(len(q.Accounts) == 0 || slices.Contains(q.Accounts, c.Account))
}

// changesTable is one row per change, with the CloudTrail event's and the resource's console
// pages.
func changesTable(cs []changes.Change, defaultRegion string) *data.Frame {
	n := len(cs)
	times := make([]time.Time, n)
	cols := map[string][]string{}
	names := []string{"action", "kind", "resource", "endpoint", "who", "what", "account", "region", "eventId", "event_url", "console_url"}
	for _, k := range names {
		cols[k] = make([]string, n)
	}
	for i, c := range cs {
		region := c.Region
		if region == "" {
			region = defaultRegion
		}
		console := ""
		switch c.Kind {
		case changes.KindComponent:
			console = consolelinks.InferenceComponent(region, c.Resource)
		case changes.KindEndpoint:
			console = consolelinks.Endpoint(region, c.Resource)
		}
		times[i] = c.Time
		for k, v := range map[string]string{"action": c.Action, "kind": c.Kind, "resource": c.Resource, "endpoint": c.Endpoint, "who": c.Who,
			"what": changes.DiffText(c.Diff), "account": c.Account, "region": c.Region, "eventId": c.EventID,
			"event_url": consolelinks.CloudTrailEvent(region, c.EventID), "console_url": console} {
			cols[k][i] = v
		}
	}
	fr := data.NewFrame(FrameChanges, data.NewField("time", nil, times))
	for _, k := range names {
		fr.Fields = append(fr.Fields, data.NewField(k, nil, cols[k]))
	}
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return fr
}

// changesAnnotations is one annotation per change: "UpdateInferenceComponent chat-llama-8b",
// who and what it set.
func changesAnnotations(cs []changes.Change) *data.Frame {
	n := len(cs)
	times, title, text, tags := make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n)
	for i, c := range cs {
		times[i], title[i] = c.Time, c.Action+" "+c.Resource
		text[i] = changes.DiffText(c.Diff)
		if c.Who != "" && text[i] != "" {
			text[i] = "by " + c.Who + ": " + text[i]
		} else if c.Who != "" {
			text[i] = "by " + c.Who
		}
		tags[i] = "change," + c.Action + "," + c.Resource
	}
	return data.NewFrame(FrameChanges,
		data.NewField("time", nil, times),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
	)
}
