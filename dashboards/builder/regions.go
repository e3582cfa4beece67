package builder

import (
	"slices"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Regions and accounts. The region is a field of every query, not a label
// filter: the data source sends one signed request per region and adds "@aws.region" to the
// series of each answer, so aggregations never mix regions and need no `by` for it. The
// account is a label ("@aws.account") of cross-account data in a monitoring account: every
// dashboard selector filters by it, and tables and tiles keep it apart.

// Variable names: the region is pkg/dashref's (diagnosis links set it); the account is only
// carried by the dashboards' own links so far.
const (
	varRegions = dashref.VarQueryRegion
	varAccount = "account"
	vRegions   = "$" + varRegions
	vAccount   = "$" + varAccount
)

// Labels of the region (added by the data source) and the account (from CloudWatch).
const (
	lRegion  = sc.LabelRegion
	lAccount = sc.LabelAccount
)

// scoped is a dashboard selector: the metric, its matchers and the account filter. Alert
// rules have no variables and use sel.
func scoped(metric string, matchers ...string) string {
	return sel(metric, append(matchers, re(lAccount, vAccount))...)
}

// withAccount adds the account to a grouping, so that same-named endpoints of two accounts
// stay apart (a label absent in one-account data groups as before).
func withAccount(by ...string) []string {
	return slices.Clip(append(slices.Clone(by), lAccount))
}

// regionLegend names the region in a legend: several regions can answer one query with
// otherwise identical series. An empty legend (Grafana's own naming, every label) already
// shows it, and so does an AZ name (us-east-1a).
func regionLegend(legend string) string {
	if legend == "" || namesRegion(legend) {
		return legend
	}
	return legend + " · {{" + lRegion + "}}"
}

// namesRegion reports whether a legend shows the region: its label, or an AZ label.
func namesRegion(legend string) bool {
	for _, l := range []string{lRegion, lAZ, sc.LabelEventAZ} {
		if strings.Contains(legend, "{{"+l+"}}") {
			return true
		}
	}
	return false
}

// PromQuery is a PromQL target of our data source: the prometheus query model plus the
// region field, which the prometheus builder does not know.
type PromQuery struct {
	prometheus.Dataquery
	Region string `json:"region,omitempty"`
}

var _ variants.Dataquery = PromQuery{}

func (q PromQuery) Equals(other variants.Dataquery) bool {
	o, ok := other.(PromQuery)
	return ok && q.Region == o.Region && q.Dataquery.Equals(o.Dataquery)
}

// promQueryBuilder builds a prometheus target and sends it to the dashboard's regions.
type promQueryBuilder struct{ inner *prometheus.DataqueryBuilder }

var _ cog.Builder[variants.Dataquery] = (*promQueryBuilder)(nil)

func (b *promQueryBuilder) Build() (variants.Dataquery, error) {
	q, err := b.inner.Build()
	if err != nil {
		return nil, err
	}
	return PromQuery{Dataquery: q.(prometheus.Dataquery), Region: vRegions}, nil
}
