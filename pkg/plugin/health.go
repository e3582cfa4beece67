package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/pkg/sigv4"
)

// defaultHealthTimeout bounds the three probes of Save & test together.
const defaultHealthTimeout = 30 * time.Second

// sageMakerLookback is how far back Save & test looks for SageMaker series.
const sageMakerLookback = 24 * time.Hour

// sageMakerProbes are series that exist once SageMaker detailed observability publishes a
// GPU endpoint's metrics: DCGM GPU utilisation and the engines' running-request gauges.
var sageMakerProbes = []string{semconv.DCGMGPUUtil, semconv.VLLMRunning, semconv.SGLangRunning}

// CheckHealth is Save & test. It proves, in order, that credentials resolve and CloudWatch
// accepts the signature and the query permission (instant 1+1 is GetMetricData), that the
// discovery permission is there (labels is ListMetrics), and whether SageMaker metrics have
// arrived yet. Each failure names its fix.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	if d.setupErr != nil {
		return d.healthError(d.setupErr.Error()), nil
	}
	// Save & test should answer while the user waits, even against an endpoint that never does.
	ctx, cancel := context.WithTimeout(ctx, d.healthTimeout)
	defer cancel()
	now := time.Now()
	if err := probe(d.client.Query(ctx, "1+1", now, 0))(nil); err != nil && !pastTheFrontDoor(err) {
		return d.healthError(d.explain(err, "cloudwatch:GetMetricData")), nil
	}
	if err := probe(d.client.Labels(ctx, nil, now.Add(-time.Hour), now, 1))(nil); err != nil {
		return d.healthError(d.explain(err, "cloudwatch:ListMetrics")), nil
	}
	var series []json.RawMessage
	if err := probe(d.client.Series(ctx, sageMakerProbes, now.Add(-sageMakerLookback), now, 1))(&series); err != nil {
		return d.healthError(d.explain(err, "cloudwatch:ListMetrics")), nil
	}
	if len(series) == 0 {
		return &backend.CheckHealthResult{
			Status: backend.HealthStatusOk,
			Message: fmt.Sprintf("Connected to CloudWatch (%s): credentials, signature and permissions work, "+
				"but no SageMaker metrics were found in the last %d hours (looked for %s). "+
				"Turn on detailed observability for the inference endpoints and OTel enrichment of vended metrics "+
				"in this account and region, then allow some time for the first data to arrive.",
				d.endpoint, int(sageMakerLookback.Hours()), strings.Join(sageMakerProbes, ", ")),
		}, nil
	}
	return &backend.CheckHealthResult{
		Status:  backend.HealthStatusOk,
		Message: fmt.Sprintf("Connected to CloudWatch (%s): queries and metric discovery work and SageMaker metrics are present.", d.endpoint),
	}, nil
}

// pastTheFrontDoor reports whether CloudWatch judged the query itself (400 bad_data, 422
// execution): authentication and the permission check come first, so such an answer still
// proves both. Whether CloudWatch evaluates a selector-free expression like 1+1 is not
// documented, and a refusal of it must not fail Save & test.
func pastTheFrontDoor(err error) bool {
	var apiErr *promclient.APIError
	return errors.As(err, &apiErr) && (apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusUnprocessableEntity)
}

func (d *Datasource) healthError(msg string) *backend.CheckHealthResult {
	return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: d.redact.String(msg)}
}

// probe takes an Upstream call's results and returns a check of them: the call's error, or
// else that the body is a Prometheus success envelope whose data decodes into data (when
// data is not nil).
func probe(resp *promclient.Response, err error) func(data any) error {
	return func(data any) error {
		if err != nil {
			return err
		}
		return successEnvelope(resp, data)
	}
}

// successEnvelope checks that a 2xx body is a Prometheus success envelope and, when data
// is not nil, decodes its data field into it.
func successEnvelope(resp *promclient.Response, data any) error {
	var env struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &env); err != nil {
		return fmt.Errorf("the endpoint answered HTTP %d with something that is not Prometheus JSON (%v): "+
			"check that the endpoint is CloudWatch (https://monitoring.<region>.amazonaws.com)", resp.Status, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("CloudWatch answered %q: %s: %s", env.Status, env.ErrorType, env.Error)
	}
	if data != nil {
		if err := json.Unmarshal(env.Data, data); err != nil {
			return fmt.Errorf("CloudWatch's answer has an unexpected data field: %v", err)
		}
	}
	return nil
}

// explain turns a failed health probe into a message that names the fix. action is the
// IAM permission the probe needs.
func (d *Datasource) explain(err error, action string) string {
	var (
		apiErr  *promclient.APIError
		credErr *sigv4.CredentialsError
		netErr  *net.OpError
		dnsErr  *net.DNSError
	)
	switch {
	case errors.As(err, &credErr):
		return "AWS credentials could not be resolved: " + credErr.Error()
	case errors.As(err, &dnsErr), errors.As(err, &netErr):
		return fmt.Sprintf("Cannot reach %s (%v): check the endpoint URL (or the datasource URL and default region), DNS, proxy and network access from the Grafana server.", d.endpoint, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s did not answer in time: check network access from the Grafana server and the query timeout.", d.endpoint)
	case !errors.As(err, &apiErr):
		return err.Error()
	}
	said := fmt.Sprintf(" (CloudWatch answered HTTP %d %s: %s)", apiErr.Status, apiErr.Type, strings.TrimSuffix(apiErr.Message, "."))
	text := strings.ToLower(apiErr.Type + " " + apiErr.Message)
	switch {
	case strings.Contains(text, "scoped to a valid region"), strings.Contains(text, "scoped to correct region"):
		return fmt.Sprintf("Wrong region: requests are signed for %q but %s belongs to another region. "+
			"Set Default Region to the region in the endpoint host (monitoring.<region>.amazonaws.com).%s", d.region, d.endpoint, said)
	case strings.Contains(text, "scoped to correct service"):
		return fmt.Sprintf("Wrong service scope: the plugin signs for service %q, which %s does not accept. "+
			"Point the endpoint at CloudWatch (https://monitoring.<region>.amazonaws.com), not an Amazon Managed Prometheus workspace or another service.%s",
			sigv4.Service, d.endpoint, said)
	case strings.Contains(text, "signature expired"), strings.Contains(text, "not yet current"),
		strings.Contains(text, "requestexpired"), strings.Contains(text, "clock skew"):
		return "Clock skew: the Grafana server's clock is more than 5 minutes away from AWS time, so signatures are rejected. " +
			"Synchronise the server clock (NTP)." + said
	case strings.Contains(text, "signaturedoesnotmatch"), strings.Contains(text, "signature we calculated does not match"):
		return "The signature does not match: the secret key does not belong to the access key (check for stray whitespace when pasting), " +
			"or a proxy altered the request." + said
	case strings.Contains(text, "unrecognizedclient"), strings.Contains(text, "invalidclienttokenid"),
		strings.Contains(text, "security token included in the request is invalid"), strings.Contains(text, "does not exist in our records"):
		return "AWS does not recognise these credentials: check the access key and secret key (or the profile / role), " +
			"and that a session token, if used, has not expired." + said
	case strings.Contains(text, "accessdenied"), strings.Contains(text, "not authorized"), apiErr.Status == 403:
		return fmt.Sprintf("Missing permission: the AWS identity may not call %s. Grant cloudwatch:GetMetricData and "+
			"cloudwatch:ListMetrics (Resource \"*\") to the user or role the datasource uses.%s", action, said)
	}
	return fmt.Sprintf("The %s probe failed%s", action, said)
}
