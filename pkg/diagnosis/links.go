package diagnosis

import (
	"net/url"
	"strconv"
	"time"
)

// Dashboard uids of the generated dashboards (dashboards/).
const (
	DashboardPerformance = "inferscope-performance"
	DashboardCapacity    = "inferscope-capacity"
	DashboardReliability = "inferscope-reliability"
)

// panelRef points at one panel of a generated dashboard.
type panelRef struct {
	dashboard string
	id        int
}

// Panels whose evidence each rule reads. The ids follow the panel order of the dashboards
// spec (docs: insights-layout.md); keep them in step with dashboards/.
var (
	panelLatencyBreakdown = panelRef{DashboardPerformance, 4}
	panelTraffic          = panelRef{DashboardPerformance, 5}
	panelThroughput       = panelRef{DashboardPerformance, 6}
	panelEnginePressure   = panelRef{DashboardPerformance, 7}
	panelErrors           = panelRef{DashboardPerformance, 8}
	panelGPUMemory        = panelRef{DashboardCapacity, 2}
	panelScaling          = panelRef{DashboardReliability, 2}
	panelColdStart        = panelRef{DashboardReliability, 3}
	panelICE              = panelRef{DashboardReliability, 4}
)

// Template variable names of the dashboards.
const (
	varEndpoint = "var-endpoint"
	varIC       = "var-inference_component"
	varInstance = "var-instance"
	varAZ       = "var-az"
)

// panelLink is a relative Grafana URL opening the panel alone with the finding's filters and
// the diagnosed time range, so the reader lands on the evidence.
func panelLink(p panelRef, t Target, start, end time.Time) string {
	if p.dashboard == "" {
		return ""
	}
	v := url.Values{}
	v.Set("viewPanel", strconv.Itoa(p.id))
	v.Set("from", strconv.FormatInt(start.UnixMilli(), 10))
	v.Set("to", strconv.FormatInt(end.UnixMilli(), 10))
	for k, val := range map[string]string{varEndpoint: t.Endpoint, varIC: t.InferenceComponent, varInstance: t.Instance, varAZ: t.AZ} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return "/d/" + p.dashboard + "?" + v.Encode()
}
