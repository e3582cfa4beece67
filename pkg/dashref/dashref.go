// Package dashref is the one table of the generated dashboards' addresses: their uids, the
// ids of the panels other code links to (diagnosis findings open them with viewPanel), and
// the template variable names that deep links set. dashboards/builder builds the panels with
// these values and pkg/diagnosis links to them, so the two cannot drift apart.
package dashref

// Dashboard uids: every link and viewPanel URL depends on them.
const (
	Performance = "inferscope-performance"
	Capacity    = "inferscope-capacity"
	Reliability = "inferscope-reliability"
)

// Template variable names, the same on every dashboard; deep links set them as var-<name>.
const (
	VarDatasource = "datasource"
	VarEndpoint   = "endpoint"
	VarIC         = "inference_component"
	VarAZ         = "az"
	VarInstance   = "instance"
	VarFramework  = "framework"
	VarModel      = "model"
	VarPercentile = "percentile"
	VarAgg        = "agg"
)

// VarQueryRegion is the region(s) every query of a dashboard is sent to (the query's
// region field, "$region"), so a link can open a panel on one region.
const VarQueryRegion = "region"

// VarConsole is a hidden variable answered from the data source's settings (aws_console()):
// the AWS console's origin in the region's partition, for console links from rows that carry
// no region; deep links do not set it.
const VarConsole = "aws_console"

// Inputs of the Capacity dashboard's "Will it fit?" calculator (text boxes, not filters).
const (
	VarFitGPUs   = "fit_gpus"    // GPUs one copy of the model needs
	VarFitMemGiB = "fit_mem_gib" // GPU memory one copy needs in total, GiB
)

// FilterVars are the variables that narrow what panels show; every panel follows each of them
// or says why not.
var FilterVars = []string{VarEndpoint, VarIC, VarAZ, VarInstance, VarFramework, VarModel}

// URLParam is the query parameter that sets a variable in a dashboard URL.
func URLParam(variable string) string { return "var-" + variable }

// Panel is one panel of a generated dashboard.
type Panel struct {
	Dashboard string
	ID        uint32
}

// Panels that links point at (diagnosis findings, alert rules' evidence). Ids 1–8 follow the spec's panel numbers per dashboard
// (docs: insights-layout.md); further panels are numbered in dashboards/README.md.
var (
	PerfTTFT             = Panel{Performance, 3}
	PerfITL              = Panel{Performance, 21}
	PerfLatencyBreakdown = Panel{Performance, 4}
	PerfTraffic          = Panel{Performance, 5}
	PerfThroughput       = Panel{Performance, 6}
	PerfEnginePressure   = Panel{Performance, 7}
	PerfErrors           = Panel{Performance, 8}
	CapGPUMemory         = Panel{Capacity, 2}
	CapGPUErrors         = Panel{Capacity, 40}
	CapGPUThermal        = Panel{Capacity, 41}
	RelAZDistribution    = Panel{Reliability, 1}
	RelScaling           = Panel{Reliability, 2}
	RelColdStart         = Panel{Reliability, 3}
	RelICE               = Panel{Reliability, 4}
)

// Linkable lists every Panel above (a test keeps it complete).
func Linkable() []Panel {
	return []Panel{PerfTTFT, PerfITL, PerfLatencyBreakdown, PerfTraffic, PerfThroughput, PerfEnginePressure, PerfErrors,
		CapGPUMemory, CapGPUErrors, CapGPUThermal, RelAZDistribution, RelScaling, RelColdStart, RelICE}
}
