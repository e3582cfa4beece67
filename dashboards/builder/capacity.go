package builder

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// mib converts DCGM framebuffer MiB to bytes for the bytes unit.
const mib = " * 1048576"

// freeGPUBelowMiB: a GPU using less framebuffer than this holds no model weights.
const freeGPUBelowMiB = "1024"

// Capacity answers "do I have enough? where is headroom? can I place one more model?".
func Capacity() *dashboard.DashboardBuilder {
	return newDashboard(UIDCapacity, "Inferscope · Capacity",
		"Do I have enough? Where is headroom? Can I place one more model?").
		WithRow(dashboard.NewRowBuilder("Summary").Id(100)).
		WithPanel(instancesStat(10)).WithPanel(gpusStat(11)).WithPanel(freeGPUsStat(12)).
		WithPanel(freeGPUMemStat(13)).WithPanel(emptyInstancesStat(14)).WithPanel(fleetGPUMemStat(15)).
		WithRow(dashboard.NewRowBuilder("Capacity health").Id(110)).
		WithPanel(capacityTiles(1)).WithPanel(headroomTable(3)).
		WithRow(dashboard.NewRowBuilder("Fleet utilisation").Id(120)).
		WithPanel(utilPanel(21, "GPU utilisation", gpuUtilDesc, byAgg("avg", gpu(sc.DCGMGPUUtil)))).
		WithPanel(utilPanel(2, "GPU memory utilisation", gpuMemDesc, gpuMemByAgg())).
		WithPanel(gpuMemUsedPanel(22)).
		WithPanel(utilPanel(23, "CPU utilisation", cpuDesc, "100 * (1 - "+byAgg("avg", rate(host(sc.NodeCPUSeconds, eq(sc.LabelCPUMode, sc.CPUModeIdle)), rateWindow))+")")).
		WithPanel(utilPanel(24, "Memory utilisation", memDesc, "100 * (1 - "+byAgg("sum", host(sc.NodeMemAvailable))+" / "+byAgg("sum", host(sc.NodeMemTotal))+")")).
		WithPanel(utilPanel(25, "Disk utilisation", diskDesc, "100 * (1 - "+byAgg("sum", host(sc.NodeFilesystemAvail))+" / "+byAgg("sum", host(sc.NodeFilesystemSize))+")")).
		WithPanel(diskIOPanel(26))
}

// gpuMemByAgg is GPU framebuffer used / total at the aggregation level.
func gpuMemByAgg() string {
	used := byAgg("sum", gpu(sc.DCGMFBUsed))
	return "100 * " + used + " / (" + used + " + " + byAgg("sum", gpu(sc.DCGMFBFree)) + ")"
}

// freeGPUs counts GPUs holding no model weights, per group (zero rather than missing).
func freeGPUs(by []string) string {
	return countBy(by, host(sc.DCGMFBUsed)+" < "+freeGPUBelowMiB) + " or 0 * " + countBy(by, host(sc.DCGMFBUsed))
}

func freeGPUsStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Free GPUs", "GPUs using under 1 GiB of framebuffer, i.e. holding no model: where a new copy can go without new instances. "+
		"0 with rising load means the next scale-out needs new instances (and may hit ICE).", unitShort).
		WithTarget(promInstant("A", "sum ("+freeGPUs([]string{lHost})+")", "")).
		Thresholds(thresholds("orange", step{1, "green"})).ColorMode(common.BigValueColorModeBackground)
}

func freeGPUMemStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Free GPU memory", "Framebuffer free across the selected GPUs. A model copy needs at least its weights plus KV cache here, on GPUs of one instance.", unitBytes).
		WithTarget(promInstant("A", "sum ("+host(sc.DCGMFBFree)+")"+mib, "")).Thresholds(thresholds("blue"))
}

func emptyInstancesStat(id uint32) *stat.PanelBuilder {
	withCopies := countBy([]string{lHost}, host(sc.DCGMGPUUtil, neq(lIC, "")))
	return statPanel(id, "Instances without IC copies", "IC endpoints: instances hosting no inference-component copy, paid for and idle. "+
		"Normal: 0 after scale-in settles. Persistently above 0 = scale-in of instances lags copies; on single-model endpoints every instance counts here, ignore it.", unitShort).
		WithTarget(promInstant("A", "count ("+countBy([]string{lHost}, host(sc.DCGMGPUUtil))+" unless "+withCopies+")", "")).
		NoValue("0").Thresholds(thresholds("green", step{1, "orange"}))
}

func fleetGPUMemStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "GPU memory used", "Framebuffer used / total across the selection. Above 89 % there is little VRAM left for another model's weights.", unitPercent).
		WithTarget(promInstant("A", gpuMemPercent(nil), "")).Min(0).Max(100).Decimals(0).
		Thresholds(thresholds("green", step{capWarn, "orange"}, step{capCrit, "red"})).ColorMode(common.BigValueColorModeBackground)
}

// headroomTable answers "can one more copy of model X fit, and where?".
func headroomTable(id uint32) *table.PanelBuilder {
	by := []string{lHost}
	sig := capacitySignals(by)
	pct := props(prop("unit", unitPercent), prop("min", 0), prop("max", 100), prop("decimals", 0), cellGauge(),
		thresholdProp("green", step{capWarn, "orange"}, step{capCrit, "red"}))
	tb := tablePanel(id, "Headroom and placement",
		"Per instance: free GPUs (under 1 GiB used), free GPU memory, free CPU memory and the utilisation of GPU, GPU memory, CPU, memory and disk. "+
			"To place one more copy of a model, find a row with enough free GPUs and free GPU memory for its weights + KV cache, and CPU/memory to spare; sort by a column to compare. "+
			"No row fits → scale out instances first. Click an instance to filter the dashboard by it.").
		Height(10).SortBy(sortBy("Free GPU memory", true))
	return columnsTable(tb, instanceCols(UIDCapacity), []valueCol{
		gpusCol(),
		{freeGPUs(by), "Free GPUs", props(prop("unit", unitShort), cellBackground(), thresholdProp("transparent", step{1, "green"}))},
		{sumBy(by, host(sc.DCGMFBFree)) + mib, "Free GPU memory", props(prop("unit", unitBytes), cellBackground(), thresholdProp("red", step{8 << 30, "orange"}, step{24 << 30, "green"}))},
		{sumBy(by, host(sc.NodeMemAvailable)), "Free memory", props(prop("unit", unitBytes))},
		{sig["gpu"], "GPU %", pct},
		{sig["gpu_memory"], "GPU memory %", pct},
		{sig["cpu"], "CPU %", pct},
		{sig["memory"], "Memory %", pct},
		{sig["disk"], "Disk %", pct},
	})
}

const (
	gpuUtilDesc = "Average GPU busy % at the \"Aggregate by\" level. High while requests run is normal; near zero on a resource that should serve traffic = no traffic reaches it (Performance → Traffic) or the engine is stuck."
	gpuMemDesc  = "Framebuffer used / total. Rising steadily over days = approaching the limit: add instances first. " +
		"A sudden drop = a model crashed or was unloaded: investigate that resource. Above 89 % little VRAM remains for another model."
	cpuDesc  = "Host CPU busy % (1 − idle). Per-host series: at the IC-copies level all copies of a host share one line. Sustained > 90 % starves tokenisation and the HTTP front end: TTFT rises with idle GPUs."
	memDesc  = "Host memory used % (1 − available / total). Creeping up without traffic change = a leak in the container; > 90 % risks the OOM killer restarting the model."
	diskDesc = "Disk used % over all filesystems of the host. Periodic spikes = model downloads during cold starts (Reliability → Cold start anatomy); a staircase that never drops = artifacts not cleaned up."
)

func utilPanel(id uint32, title, desc, expr string) *timeseries.PanelBuilder {
	return timeseriesPanel(id, title, desc, unitPercent).
		WithTarget(promRange("A", expr, "{{$agg}}")).Min(0).Max(100).Span(8).
		Thresholds(thresholds("green", step{capWarn, "orange"}, step{capCrit, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

func gpuMemUsedPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "GPU memory used",
		"Framebuffer used in bytes at the \"Aggregate by\" level: the absolute view of GPU memory. A step up is a model loading; a cliff is a model crashing or unloading; "+
			"a slow ramp over days is KV/fragmentation growth approaching the limit.", unitBytes).
		WithTarget(promRange("A", byAgg("sum", gpu(sc.DCGMFBUsed))+mib, "{{$agg}}")).Min(0).Span(8)
}

func diskIOPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Disk busy time",
		"Share of time each host's disks were busy. Periodic spikes aligned with scale-outs = model downloads during cold starts; "+
			"long plateaus near 100 % slow cold starts down (consider caching artifacts on instance storage).", unitRatio).
		WithTarget(promRange("A", byAgg("max", rate(host(sc.NodeDiskIOTimeSeconds), rateWindow)), "{{$agg}}")).Min(0).Span(8)
}
