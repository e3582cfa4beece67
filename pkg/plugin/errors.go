package plugin

import (
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/fault"
)

// explain is fault.Explain naming the region's endpoint and region; a nil rg (its clients
// could not be built) is refused.
func (rg *regional) explain(err error, action string) fault.Problem {
	if rg == nil {
		return refused(err)
	}
	return fault.Explain(err, fault.Context{Endpoint: rg.endpoint.URL.Redacted(), Region: rg.region, Action: action})
}

// refused explains a failure before any region's clients exist (the settings, a query's or
// a call's own fields): there is no endpoint to name.
func refused(err error) fault.Problem { return fault.Explain(err, fault.Context{}) }

// errorResponse is the DataResponse of a query that failed in the region.
func (rg *regional) errorResponse(err error) backend.DataResponse {
	return problemResponse(rg.explain(err, "cloudwatch:GetMetricData"))
}

func problemResponse(p fault.Problem) backend.DataResponse {
	logDebug("query failed", "status", int(p.Status), "source", string(p.Source), "error", p.Message)
	return backend.ErrDataResponseWithSource(p.Status, p.Source, p.Message)
}

// problemJSON answers a resource call that failed in the Prometheus error envelope; prefix
// (or "") names what failed.
func problemJSON(p fault.Problem, prefix string) *backend.CallResourceResponse {
	return errorResponseJSON(int(p.Status), errorTypeFor(int(p.Status)), prefix+p.Message)
}
