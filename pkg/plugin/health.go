package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
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
// Once PromQL works, the optional alarms and inventory access is checked: what is missing is
// a warning in the message, never a failure. A shared store is reported last, also only as
// a warning.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	defer d.store.enter()()
	// Save & test should answer while the user waits, even against an endpoint that never does.
	ctx, cancel := context.WithTimeout(ctx, d.healthTimeout)
	defer cancel()
	home, err := d.regional(ctx, "")
	if err != nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: d.redact.String(refused(err).Message)}, nil
	}
	res := home.checkHealth(ctx)
	if res.Status == backend.HealthStatusOk {
		res.Message = strings.Join(slices.DeleteFunc([]string{res.Message, d.checkRegionEndpoints(ctx), home.checkOptional(ctx)},
			func(m string) bool { return m == "" }), " ")
	}
	if d.store != nil {
		// Whatever the AWS checks found: the store's state does not change their status.
		res.Message += " " + d.store.health(ctx)
	}
	res.Message = d.redact.String(res.Message)
	return res, nil
}

// checkHealth is the PromQL probes of Save & test, in the region.
func (rg *regional) checkHealth(ctx context.Context) *backend.CheckHealthResult {
	now := time.Now()
	if err := queryProbe(ctx, rg.client, now); err != nil {
		return rg.healthError(err, "cloudwatch:GetMetricData")
	}
	if err := rg.client.Labels(ctx, nil, now.Add(-time.Hour), now, 1, promclient.Data(nil)); err != nil {
		return rg.healthError(err, "cloudwatch:ListMetrics")
	}
	var series []json.RawMessage
	if err := rg.client.Series(ctx, sageMakerProbes, now.Add(-sageMakerLookback), now, 1, promclient.Data(&series)); err != nil {
		return rg.healthError(err, "cloudwatch:ListMetrics")
	}
	if len(series) == 0 {
		return &backend.CheckHealthResult{
			Status: backend.HealthStatusOk,
			Message: fmt.Sprintf("Connected to CloudWatch (%s): credentials, signature and permissions work, "+
				"but no SageMaker metrics were found in the last %d hours (looked for %s). "+
				"Turn on detailed observability for the inference endpoints and OTel enrichment of vended metrics "+
				"in this account and region, then allow some time for the first data to arrive.",
				rg.endpoint.URL.Redacted(), int(sageMakerLookback.Hours()), strings.Join(sageMakerProbes, ", ")),
		}
	}
	if warning := rg.enrichmentWarning(ctx, now); warning != "" {
		return &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: warning}
	}
	return &backend.CheckHealthResult{
		Status:  backend.HealthStatusOk,
		Message: fmt.Sprintf("Connected to CloudWatch (%s): queries and metric discovery work and SageMaker metrics are present.", rg.endpoint.URL.Redacted()),
	}
}

// queryProbe is Save & test's first probe: an instant 1+1 proves the signature and the
// query permission (GetMetricData), even when CloudWatch refuses the expression itself.
func queryProbe(ctx context.Context, c Upstream, now time.Time) error {
	if err := c.Query(ctx, "1+1", now, 0, promclient.Data(nil)); err != nil && !pastTheFrontDoor(err) {
		return err
	}
	return nil
}

// pastTheFrontDoor reports whether CloudWatch judged the query itself (400 bad_data, 422
// execution): authentication and the permission check come first, so such an answer still
// proves both. Whether CloudWatch evaluates a selector-free expression like 1+1 is not
// documented, and a refusal of it must not fail Save & test.
func pastTheFrontDoor(err error) bool {
	var apiErr *promclient.APIError
	return errors.As(err, &apiErr) && !apiErr.Throttled &&
		(apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusUnprocessableEntity)
}

// checkRegionEndpoints sends the first probe (instant 1+1) to each region that has an
// endpoint of its own (regionEndpoints), besides the default region, which the other probes
// covered: a mistyped URL or a listener that refuses the region's signature shows here,
// as a warning naming the region and its fix, instead of in a panel later.
func (d *Datasource) checkRegionEndpoints(ctx context.Context) string {
	var regions []string
	for region := range d.settings.Auth.RegionEndpoints {
		if region != d.home.region {
			regions = append(regions, region)
		}
	}
	if len(regions) == 0 {
		return ""
	}
	slices.Sort(regions)
	// A third of Save & test's budget: an endpoint that never answers must leave time for
	// the alarms and inventory checks after it.
	ctx, cancel := context.WithTimeout(ctx, d.healthTimeout/3)
	defer cancel()
	now := time.Now()
	rgs, errs := d.inRegions(ctx, "Save & test", regions, func(ctx context.Context, _ int, rg *regional) error {
		return queryProbe(ctx, rg.client, now)
	})
	var ok, warnings []string
	for i, err := range errs {
		if err == nil {
			ok = append(ok, regions[i])
			continue
		}
		warnings = append(warnings, fmt.Sprintf("Warning: region %s, with its own endpoint, does not answer: %s",
			regions[i], rgs[i].explain(fmt.Errorf("the cloudwatch:GetMetricData probe failed: %w", err), "cloudwatch:GetMetricData").Message))
	}
	msg := strings.Join(warnings, " ")
	if len(ok) > 0 {
		msg = strings.TrimSpace("Endpoints per region answer for " + strings.Join(ok, ", ") + ". " + msg)
	}
	return msg
}

// healthError explains a failed probe; action is the IAM permission the probe needs.
func (rg *regional) healthError(err error, action string) *backend.CheckHealthResult {
	err = fmt.Errorf("the %s probe failed: %w", action, err)
	return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: rg.explain(err, action).Message}
}

// checkOptional makes one cheap DescribeAlarms, ListEndpoints, autoscaling, GetProducts and
// LookupEvents call and says what works. A missing permission names the IAM action; any failure is a warning, as the
// PromQL panels work without them.
func (rg *regional) checkOptional(ctx context.Context) string {
	if rg.aws == nil {
		return "Warning: alarms and inventory are unavailable: " + rg.explain(rg.awsErr, "").Message
	}
	errs := parallel("Save & test",
		func() error { return rg.aws.ProbeAlarms(ctx) },
		func() error { return rg.aws.ProbeInventory(ctx) },
		func() error { return rg.aws.ProbeScaling(ctx) },
		func() error {
			if rg.prices == nil {
				return rg.pricesErr
			}
			return rg.prices.ProbePrices(ctx)
		},
		func() error {
			if rg.changes == nil {
				return rg.changesErr
			}
			return rg.changes.ProbeChanges(ctx)
		})
	var ok, warnings []string
	for i, check := range []struct {
		action, what, done string
	}{
		{awsapi.ActionDescribeAlarms, "the alarms and alarmHistory queries and the alarm colours of the health tiles", "CloudWatch alarms"},
		{awsapi.ActionListEndpoints, "the inventory query, the inventory variables and tiles for endpoints without alarms", "SageMaker endpoints"},
		{awsapi.ActionDescribeScalableTargets, fmt.Sprintf("the diagnosis to judge autoscaling against each component's own policy; without it, against %s× its usual load",
			strconv.FormatFloat(diagnosis.DefaultConfig().ScalingRise, 'f', -1, 64)), "autoscaling policies"},
		{awsapi.ActionGetProducts, "the cost panels' list prices (a price table in the settings still prices what it lists)", "AWS list prices"},
		{awsapi.ActionLookupEvents, "the changes query and the diagnosis tying an incident to the deployment or setting change before it", "CloudTrail changes"},
	} {
		switch err := errs[i]; {
		case err == nil:
			ok = append(ok, check.done)
		case awsapi.IsPermission(err):
			warnings = append(warnings, fmt.Sprintf("Warning: %s (needed for %s; optional, PromQL panels work without it).", rg.explain(awsErr(err), "").Message, check.what))
		default:
			warnings = append(warnings, fmt.Sprintf("Warning: the %s check failed, so %s may not work: %s.", check.action, check.what, rg.explain(awsErr(err), check.action).Message))
		}
	}
	msg := strings.Join(warnings, " ")
	if len(ok) > 0 {
		msg = strings.TrimSpace("Can read " + strings.Join(ok, " and ") + ". " + msg)
	}
	return msg
}
