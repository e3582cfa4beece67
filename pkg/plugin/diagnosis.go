package plugin

import (
	"context"
	"net/url"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/consolelinks"
	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis/awspolicy"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// runDiagnosis answers a `diagnosis` query: the rules of pkg/diagnosis run their PromQL
// through this datasource's clients, so they share its credentials, limits, retries and
// results cache, and their errors reach the same edge as a panel's; the scaling rule reads
// the ICs' autoscaling policies through its AWS client (cached like the inventory). A query naming regions
// runs the rules in each, through that region's client, and ranks the findings together; one
// naming none runs in the default region and its frame has no region column.
func (d *Datasource) runDiagnosis(ctx context.Context, m *models.Model) backend.DataResponse {
	q := m.Query()
	if err := models.CheckTimeRange(q.RefID, q.TimeRange); err != nil {
		return problemResponse(refused(backend.DownstreamError(err)))
	}
	field, err := m.Region()
	if err != nil {
		return problemResponse(refused(backend.DownstreamError(err)))
	}
	names := []string{""} // the default region, unnamed: the frame has no region column
	if field != "" {
		if names, err = d.regionsOf(q.RefID, field); err != nil {
			return problemResponse(refused(err))
		}
	}
	regions := make([]diagnosis.Region, len(names))
	built := make(map[string]*regional, len(names)) // a failure is worded with its region's endpoint
	for i, name := range names {
		rg, err := d.regional(ctx, name)
		regions[i] = diagnosis.Region{Name: name, Err: err}
		if err == nil {
			regions[i].Querier = cachedQueries{rg}
			regions[i].Prices = rg.priceOf(ctx)
			if rg.aws != nil { // without it the scaling rule judges against the usual load
				regions[i].Policies = awspolicy.Source(rg.aws, time.Now)
			}
			if rg.changes != nil { // without it no finding is tied to a change
				regions[i].Changes = awspolicy.Changes(rg.changes)
			}
			built[name] = rg
		}
	}
	var resp backend.DataResponse
	if endpoint, component, err := m.Diagnosis(); err != nil {
		resp = diagnosis.InvalidQuery(err)
	} else {
		resp = diagnosis.HandleScope(ctx, regions, q, endpoint, component, func(region string, err error) string {
			return built[region].explain(err, "cloudwatch:GetMetricData").Message
		})
	}
	if resp.Error != nil {
		// Every region failed; the error is the first region's.
		return built[names[0]].errorResponse(resp.Error)
	}
	for _, f := range resp.Frames {
		addConsoleLinks(f, d.home.region)
	}
	return resp
}

// addConsoleLinks gives each finding of a diagnosis frame the SageMaker console page and the
// Logs Insights view of its endpoint or IC (fields console_url and logs_url, linked from the
// scope column), in the finding's region (its region column; region when the frame has
// none). The finding's resource is read from its panel link, which carries the endpoint and
// IC as dashboard variables; rows without one (failed rules) get no links.
func addConsoleLinks(f *data.Frame, defaultRegion string) {
	link, _ := f.FieldByName("link")
	regions, _ := f.FieldByName("region")
	scope, _ := f.FieldByName("scope")
	if link == nil || scope == nil || link.Type() != data.FieldTypeString {
		return
	}
	console, logs := make([]string, link.Len()), make([]string, link.Len())
	for i := range link.Len() {
		u, err := url.Parse(link.At(i).(string))
		if err != nil {
			continue
		}
		ep, ic := u.Query().Get(dashref.URLParam(dashref.VarEndpoint)), u.Query().Get(dashref.URLParam(dashref.VarIC))
		region := defaultRegion
		if regions != nil {
			region = regions.At(i).(string)
		}
		switch {
		case ic != "":
			console[i] = consolelinks.InferenceComponent(region, ic)
			logs[i] = consolelinks.LogsInsights(region, consolelinks.ComponentLogGroup(ic))
		case ep != "":
			console[i] = consolelinks.Endpoint(region, ep)
			logs[i] = consolelinks.LogsInsights(region, consolelinks.EndpointLogGroup(ep))
		}
	}
	f.Fields = append(f.Fields, data.NewField("console_url", nil, console), data.NewField("logs_url", nil, logs))
	if scope.Config == nil {
		scope.Config = &data.FieldConfig{}
	}
	scope.Config.Links = append(scope.Config.Links,
		data.DataLink{Title: "Open in the SageMaker console", URL: "${__data.fields.console_url}", TargetBlank: true},
		data.DataLink{Title: "Logs in CloudWatch Logs Insights", URL: "${__data.fields.logs_url}", TargetBlank: true})
}
