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
	p := d.explain(err, "cloudwatch:GetMetricData")
	logDebug("query failed", "status", int(p.Status), "source", string(p.Source), "error", p.Message)
	return backend.ErrDataResponseWithSource(p.Status, p.Source, p.Message)
}
