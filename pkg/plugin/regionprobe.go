package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// regionsResource lists the regions where the data source's credentials find SageMaker
// metrics, for the regions() variable and the editor's region picker.
const regionsResource = "regions"

const (
	// regionProbeTTL is how long a region list is reused: probing is one call per allowed
	// region (31 by default), too many for every variable refresh.
	regionProbeTTL = 5 * time.Minute
	// regionProbeParallel bounds the probes at once.
	regionProbeParallel = 4
	// regionProbeTimeout bounds one region's probe; a region that does not answer in time
	// counts as one without data.
	regionProbeTimeout = 10 * time.Second
	// regionProbeBudget bounds a whole probe: with regions that do not answer, ceil(31/4)
	// rounds of regionProbeTimeout would take 80s, longer than callers wait.
	regionProbeBudget = 20 * time.Second
)

// regionProbe caches the last region list; mu is held while probing, so concurrent
// callers share one probe.
type regionProbe struct {
	mu   sync.Mutex
	list []string
	at   time.Time
}

// regionsValues answers GET regions with a JSON array of region names.
func (d *Datasource) regionsValues(ctx context.Context, req *backend.CallResourceRequest) *backend.CallResourceResponse {
	if req.Method != http.MethodGet {
		return errorResponseJSON(http.StatusMethodNotAllowed, "bad_data", "method "+req.Method+" is not allowed on "+regionsResource+": use GET")
	}
	body, _ := json.Marshal(d.regionList(ctx, time.Now()))
	return jsonResponse(http.StatusOK, body)
}

// regionList is the allowed regions whose probe found SageMaker series, sorted; when no
// probe answered or none found any, jsonData.allowedRegions and the default region.
// Reused for regionProbeTTL; a probe lasts at most regionProbeBudget.
func (d *Datasource) regionList(ctx context.Context, now time.Time) []string {
	p := &d.probe
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.list != nil && now.Sub(p.at) < regionProbeTTL {
		return p.list
	}
	// Not the caller's context: a caller that gives up leaves a finished answer to the next
	// one, instead of every refresh starting a probe that never ends.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), regionProbeBudget)
	defer cancel()
	found := d.probeRegions(pctx, d.allowed, now)
	if len(found) == 0 {
		// The default region is always queryable, so region = All must not leave it out.
		found = slices.Clone(d.settings.AllowedRegions)
		if !slices.Contains(found, d.home.region) {
			found = append(found, d.home.region)
		}
		slices.Sort(found)
	}
	p.list, p.at = found, now
	return found
}

// probeRegions asks each candidate, at most regionProbeParallel at once, for one SageMaker
// series; it returns those that have one, in the candidates' order. A failing or
// panicking probe counts as no data.
func (d *Datasource) probeRegions(ctx context.Context, candidates []string, now time.Time) []string {
	has := make([]bool, len(candidates))
	calls := make([]func() error, len(candidates))
	for i, region := range candidates {
		calls[i] = func() error {
			rg, err := d.regional(ctx, region)
			if err != nil {
				return err
			}
			pctx, cancel := context.WithTimeout(ctx, regionProbeTimeout)
			defer cancel()
			var series []map[string]string
			err = rg.client.Series(pctx, sageMakerProbes, now.Add(-sageMakerLookback), now, 1, promclient.Data(&series))
			has[i] = err == nil && len(series) > 0
			return err
		}
	}
	for i, err := range parallelN("region probe", regionProbeParallel, calls...) {
		if err != nil {
			logDebug("region probe failed", "region", candidates[i], "error", d.redact.String(err.Error()))
		}
	}
	var out []string
	for i, r := range candidates {
		if has[i] {
			out = append(out, r)
		}
	}
	return out
}
