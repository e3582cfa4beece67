package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/fault"
)

// explain is fault.Explain with what this datasource can tell the user about itself.
func (d *Datasource) explain(err error, action string) fault.Problem {
	return fault.Explain(err, fault.Context{Endpoint: d.endpoint, Region: d.region, Action: action})
}

// errorResponse is the DataResponse of a failed query.
func (d *Datasource) errorResponse(err error) backend.DataResponse {
	return problemResponse(d.explain(err, "cloudwatch:GetMetricData"))
}

// errorResponse is the DataResponse of a query that failed in this region: the message
// names the region's endpoint.
func (rg *regional) errorResponse(err error) backend.DataResponse {
	return problemResponse(rg.explain(err, "cloudwatch:GetMetricData"))
}

// explain is fault.Explain naming the region's endpoint and region.
func (rg *regional) explain(err error, action string) fault.Problem {
	return fault.Explain(err, fault.Context{Endpoint: rg.endpoint.URL.Redacted(), Region: rg.region, Action: action})
}

func problemResponse(p fault.Problem) backend.DataResponse {
	logDebug("query failed", "status", int(p.Status), "source", string(p.Source), "error", p.Message)
	return backend.ErrDataResponseWithSource(p.Status, p.Source, p.Message)
}
