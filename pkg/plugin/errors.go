package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sigv4"
)

// classify decides the HTTP-style status, the error source and the user-facing message
// of a failure. Everything caused by the user's settings or query, or by CloudWatch and
// the network, is downstream, so Grafana's plugin SLOs only count the plugin's own bugs.
func classify(err error) (backend.Status, backend.ErrorSource, string) {
	var (
		apiErr  *promclient.APIError
		credErr *sigv4.CredentialsError
		netErr  *net.OpError
		dnsErr  *net.DNSError
	)
	switch {
	case errors.As(err, &apiErr):
		// CloudWatch's own words, status as it answered (403 signature, 422 throttle...).
		return backend.Status(apiErr.Status), backend.ErrorSourceDownstream, apiErr.Error()
	case errors.As(err, &credErr):
		return backend.StatusUnauthorized, backend.ErrorSourceDownstream, credErr.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return backend.StatusTimeout, backend.ErrorSourceDownstream,
			"the query timed out: narrow the time range, simplify the query or raise the datasource's query timeout"
	case errors.Is(err, context.Canceled):
		return backend.StatusTimeout, backend.ErrorSourceDownstream, "the query was canceled"
	case errors.As(err, &dnsErr), errors.As(err, &netErr):
		return backend.StatusBadGateway, backend.ErrorSourceDownstream,
			fmt.Sprintf("cannot reach the CloudWatch endpoint: %v; check the endpoint setting, DNS, proxy and network", err)
	case backend.IsDownstreamError(err):
		return backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error()
	}
	return backend.StatusInternal, backend.ErrorSourcePlugin, err.Error()
}

// errorResponse is the DataResponse of a failed query.
func (d *Datasource) errorResponse(err error) backend.DataResponse {
	status, source, msg := classify(err)
	return backend.ErrDataResponseWithSource(status, source, d.redact.String(msg))
}
