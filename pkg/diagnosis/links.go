package diagnosis

import (
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
)

// panelRef points at one panel of a generated dashboard; the zero value links nowhere.
type panelRef = dashref.Panel

// Panels whose evidence each rule reads (ids and uids live in pkg/dashref, which the
// dashboards are built from).
var (
	panelLatencyBreakdown = dashref.PerfLatencyBreakdown
	panelTraffic          = dashref.PerfTraffic
	panelThroughput       = dashref.PerfThroughput
	panelEnginePressure   = dashref.PerfEnginePressure
	panelErrors           = dashref.PerfErrors
	panelGPUMemory        = dashref.CapGPUMemory
	panelGPUErrors        = dashref.CapGPUErrors
	panelGPUThermal       = dashref.CapGPUThermal
	panelScaling          = dashref.RelScaling
	panelColdStart        = dashref.RelColdStart
	panelICE              = dashref.RelICE
	panelIdle             = dashref.CapIdleSpend
)

// LinkedPanels are the panels the rules' findings link to, one per rule in evaluation order.
func LinkedPanels() []dashref.Panel {
	out := make([]dashref.Panel, len(allRules))
	for i, r := range allRules {
		out[i] = r.panel
	}
	return out
}

// panelLink is a relative Grafana URL opening the panel alone with the finding's filters and
// the diagnosed time range, so the reader lands on the evidence; a panel without an id opens
// its whole dashboard.
func panelLink(p panelRef, t Target, start, end time.Time) string {
	if p.Dashboard == "" {
		return ""
	}
	v := url.Values{}
	if p.ID != 0 {
		v.Set("viewPanel", strconv.Itoa(int(p.ID)))
	}
	v.Set("from", strconv.FormatInt(start.UnixMilli(), 10))
	v.Set("to", strconv.FormatInt(end.UnixMilli(), 10))
	for name, val := range map[string]string{dashref.VarEndpoint: t.Endpoint, dashref.VarIC: t.InferenceComponent, dashref.VarInstance: t.Instance, dashref.VarAZ: t.AZ} {
		if val != "" {
			v.Set(dashref.URLParam(name), val)
		}
	}
	return "/d/" + p.Dashboard + "?" + v.Encode()
}

// failureLink opens the panel a rule that could not be evaluated would have linked to, on
// the diagnosed scope, region and time range, so the reader can look at what it reads; a
// region that failed as a whole (no rule) opens the Performance dashboard on that region.
func failureLink(f RuleFailure, s Scope, start, end time.Time) string {
	p := panelRef{Dashboard: dashref.Performance}
	if i := slices.IndexFunc(allRules, func(r rule) bool { return r.id == f.Rule }); i >= 0 && allRules[i].panel.Dashboard != "" {
		p = allRules[i].panel
	} else if f.Rule == crossRegionRuleID {
		p = panelICE
	}
	return regionLink(panelLink(p, Target{Endpoint: s.Endpoint, InferenceComponent: s.InferenceComponent}, start, end), f.Region)
}

// regionLink opens a finding's panel on the finding's region (the dashboards' region
// variable); links of unnamed regions stay as they are.
func regionLink(link, region string) string {
	if link == "" || region == "" {
		return link
	}
	return link + "&" + url.Values{dashref.URLParam(dashref.VarQueryRegion): {region}}.Encode()
}
