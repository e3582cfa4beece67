package builder

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
)

// setVar fixes one variable in a deep link.
type setVar struct{ name, value string }

// drillURL is a data link to a dashboard keeping the time range and the variables.
func drillURL(uid string, set ...setVar) string {
	return drillPath(uid, set...) + "&${__url_time_range}"
}

// drillPath keeps every variable except those set; `${var:queryparam}` expands to
// var-<name>=<value> for each selected value. A variable set to "" is left out of the URL, so
// it opens at its default (the ad-hoc filters: none).
func drillPath(uid string, set ...setVar) string {
	fixed := map[string]bool{}
	for _, s := range set {
		fixed[s.name] = true
	}
	parts := []string{}
	for _, name := range allVarNames {
		if !fixed[name] {
			parts = append(parts, "${"+name+":queryparam}")
		}
	}
	for _, s := range set {
		if s.value != "" {
			parts = append(parts, "var-"+s.name+"="+s.value)
		}
	}
	return "/d/" + uid + "?" + strings.Join(parts, "&")
}

// Drill-down targets: fleet → endpoint → endpoint + IC, and "filter by this instance". An
// endpoint or IC opens in the row's region: names are unique only within a region.
func endpointLink(uid, region, value string) map[string]any {
	return link("Open this endpoint", drillURL(uid, setVar{varRegions, region}, setVar{dashref.VarEndpoint, value}, setVar{dashref.VarIC, "$__all"}, setVar{dashref.VarInstance, "$__all"}))
}

func icLink(uid, region, endpoint, ic string) map[string]any {
	return link("Open this inference component", drillURL(uid, setVar{varRegions, region}, setVar{dashref.VarEndpoint, endpoint}, setVar{dashref.VarIC, ic}, setVar{dashref.VarInstance, "$__all"}))
}

func instanceLink(uid, value string) map[string]any {
	return link("Filter by this instance", drillURL(uid, setVar{dashref.VarInstance, value}))
}

// fieldLabel is a data-link reference to a label of the clicked series; names PromQL must
// quote (dotted, '@') need the bracket form.
func fieldLabel(name string) string {
	if label(name) == name {
		return "${__field.labels." + name + "}"
	}
	return `${__field.labels["` + name + `"]}`
}

// dashboardLinks puts the three dashboards and a fleet reset on top of each one, carrying
// variables and time; the reset drops the ad-hoc filters too.
func dashboardLinks(self string) []cog.Builder[dashboard.DashboardLink] {
	titles := map[string]string{dashref.Performance: "Performance", dashref.Capacity: "Capacity", dashref.Reliability: "Reliability"}
	var out []cog.Builder[dashboard.DashboardLink]
	for _, uid := range []string{dashref.Performance, dashref.Capacity, dashref.Reliability} {
		if uid == self {
			continue
		}
		out = append(out, dashboard.NewDashboardLinkBuilder(titles[uid]).Type(dashboard.DashboardLinkTypeLink).
			Url("/d/"+uid).Icon("dashboard").Tooltip(titles[uid]+" view of the same selection").
			IncludeVars(true).KeepTime(true).TargetBlank(false).AsDropdown(false).Tags([]string{}))
	}
	return append(out, dashboard.NewDashboardLinkBuilder("Fleet (all endpoints)").Type(dashboard.DashboardLinkTypeLink).
		Url(drillPath(self, setVar{dashref.VarEndpoint, "$__all"}, setVar{dashref.VarIC, "$__all"}, setVar{dashref.VarAZ, "$__all"}, setVar{dashref.VarInstance, "$__all"}, setVar{varFilters, ""})).
		Icon("external link").Tooltip("Clear endpoint, IC, AZ, instance and ad-hoc filters; keep the time range").
		IncludeVars(false).KeepTime(true).TargetBlank(false).AsDropdown(false).Tags([]string{}))
}
