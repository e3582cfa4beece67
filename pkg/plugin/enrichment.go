package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// vendedProbes are enriched vended metrics that every endpoint serving traffic publishes once
// OTel enrichment is on.
var vendedProbes = []string{semconv.Invocations, semconv.InvocationsByInstanceID}

// enrichmentWarning is Save & test's last check, made once native SageMaker series are known
// to arrive: if no enriched vended metric does, enrichment is off and the Invocations, error,
// latency and traffic panels will be empty. It returns the warning, or "" when enrichment is
// on or the probe cannot tell (the earlier probes already judged access).
func (rg *regional) enrichmentWarning(ctx context.Context, now time.Time) string {
	var series []json.RawMessage
	if err := rg.client.Series(ctx, vendedProbes, now.Add(-sageMakerLookback), now, 1, promclient.Data(&series)); err != nil || len(series) > 0 {
		return ""
	}
	return fmt.Sprintf("Connected to CloudWatch (%s) and SageMaker metrics are present, but no enriched vended metrics arrived in the last %d hours "+
		"(looked for %v). Turn on %s in this account and region. Until then the Invocations, 5XX, latency-breakdown and traffic panels show "+
		"\"No vended metrics\" instead of numbers.", rg.endpoint.URL.Redacted(), int(sageMakerLookback.Hours()), vendedProbes, semconv.EnrichmentSwitch)
}
