package diagnosis

import (
	"net/url"
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
// the diagnosed time range, so the reader lands on the evidence.
func panelLink(p panelRef, t Target, start, end time.Time) string {
	if p.Dashboard == "" {
		return ""
	}
	v := url.Values{}
	v.Set("viewPanel", strconv.Itoa(int(p.ID)))
	v.Set("from", strconv.FormatInt(start.UnixMilli(), 10))
	v.Set("to", strconv.FormatInt(end.UnixMilli(), 10))
	for name, val := range map[string]string{dashref.VarEndpoint: t.Endpoint, dashref.VarIC: t.InferenceComponent, dashref.VarInstance: t.Instance, dashref.VarAZ: t.AZ} {
		if val != "" {
			v.Set(dashref.URLParam(name), val)
		}
	}
	return "/d/" + p.Dashboard + "?" + v.Encode()
}

// regionLink opens a finding's panel on the finding's region (the dashboards' region
// variable); links of unnamed regions stay as they are.
func regionLink(link, region string) string {
	if link == "" || region == "" {
		return link
	}
	return link + "&" + url.Values{dashref.URLParam(dashref.VarQueryRegion): {region}}.Encode()
}
