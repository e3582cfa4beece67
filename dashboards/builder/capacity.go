package builder

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// mib converts DCGM framebuffer MiB to bytes for the bytes unit.
const mib = " * 1048576"

// freeGPUBelowMiB: a GPU using less framebuffer than this holds no model weights.
const freeGPUBelowMiB = "1024"

// Capacity answers "do I have enough? where is headroom? can I place one more model?".
func Capacity() *dashboard.DashboardBuilder {
	return newDashboard(dashref.Capacity, "Inferscope · Capacity",
		"Do I have enough? Where is headroom? Can I place one more model?").
		WithRow(dashboard.NewRowBuilder("Summary").Id(100)).
		WithPanel(instancesStat(10)).WithPanel(gpusStat(11)).WithPanel(freeGPUsStat(12)).
		WithPanel(freeGPUMemStat(13)).WithPanel(emptyInstancesStat(14)).WithPanel(fleetGPUMemStat(15)).
		WithRow(dashboard.NewRowBuilder("Capacity health").Id(110)).
		WithPanel(capacityTiles(1)).WithPanel(headroomTable(3)).
		WithRow(dashboard.NewRowBuilder("Fleet utilisation").Id(120)).
		WithPanel(utilPanel(21, "GPU utilisation", gpuUtilDesc+noteNoEngine, byAgg("avg", gpu(sc.DCGMGPUUtil)))).
		WithPanel(utilPanel(dashref.CapGPUMemory.ID, "GPU memory utilisation", gpuMemDesc+noteNoEngine, gpuMemByAgg())).
		WithPanel(gpuMemUsedPanel(22)).
		WithPanel(utilPanel(23, "CPU utilisation", cpuDesc+noteMachine, "100 * (1 - "+byAgg("avg", rate(host(sc.NodeCPUSeconds, eq(sc.LabelCPUMode, sc.CPUModeIdle)), rateWindow))+")")).
		WithPanel(utilPanel(24, "Memory utilisation", memDesc+noteMachine, "100 * (1 - "+byAgg("sum", host(sc.NodeMemAvailable))+" / "+byAgg("sum", host(sc.NodeMemTotal))+")")).
		WithPanel(utilPanel(25, "Disk utilisation", diskDesc+noteMachine, "100 * (1 - "+byAgg("sum", host(sc.NodeFilesystemAvail))+" / "+byAgg("sum", host(sc.NodeFilesystemSize))+")")).
		WithPanel(diskIOPanel(26)).
		WithRow(dashboard.NewRowBuilder("GPU health").Id(130)).
		WithPanel(gpuThermalPanel(dashref.CapGPUThermal.ID)).WithPanel(throttlePanel(44)).WithPanel(powerPanel(42)).
		WithPanel(smPanel(43)).WithPanel(interconnectPanel(45)).WithPanel(gpuErrorsTable(dashref.CapGPUErrors.ID)).
		WithRow(dashboard.NewRowBuilder("Will it fit?").Id(140)).
		WithPanel(fitTotalStat(48)).WithPanel(fitPerAZStat(49)).WithPanel(fitTable(47)).WithPanel(placementTable(46)).WithPanel(fitCostTable(52)).
		WithRow(dashboard.NewRowBuilder("Cost").Id(150)).
		WithPanel(spendTable(53)).WithPanel(tokenCostTable(54)).WithPanel(idleTable(dashref.CapIdleSpend.ID)).WithPanel(pricesTable(56)).
		WithPanel(spendByTagTable(57)).
		WithVariable(fitVar(dashref.VarFitGPUs, "GPUs per copy", "GPUs one copy of the model needs (tensor-parallel degree).", "1")).
		WithVariable(fitVar(dashref.VarFitMemGiB, "GPU memory per copy (GiB)", "GPU memory one copy needs in total: weights plus the KV cache you want, GiB.", "16")).
		WithVariable(fitVar(dashref.VarCostTag, "Spend by tag", "The resource tag key (as in AWS, e.g. Team or CostCenter) the Spend by table groups by.", "Team"))
}

// fitVar is an input of the "Will it fit?" calculator.
func fitVar(name, label, desc, value string) *dashboard.TextBoxVariableBuilder {
	return dashboard.NewTextBoxVariableBuilder(name).Label(label).Description(desc).
		DefaultValue(dashboard.StringOrMap{String: cog.ToPtr(value)}).Current(option(value, value))
}

// fitGPUs are GPUs that can take a shard of one more copy now: no model on them (under 1 GiB
// used) and at least the copy's memory divided over its GPUs free.
func fitGPUs() string {
	perGPU := "$" + dashref.VarFitMemGiB + " * 1024 / $" + dashref.VarFitGPUs
	return "(" + host(sc.DCGMFBUsed) + " < " + freeGPUBelowMiB + ") and (" + host(sc.DCGMFBFree) + " >= " + perGPU + ")"
}

// fitCopies is how many copies fit on each instance (a copy's GPUs must share an instance).
func fitCopies(by ...string) string {
	perInstance := "floor(" + countBy(append([]string{lHost}, by...), fitGPUs()) + " / $" + dashref.VarFitGPUs + ")"
	return perInstance
}

const fitDesc = "Given the model in the inputs above (GPUs per copy, GPU memory per copy), how many copies the selected instances can take now, without new instances: " +
	"a copy needs that many empty GPUs on one instance, each with its share of the memory free. "

func fitTotalStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Copies that fit now", fitDesc+"0 = the next copy needs a new instance (scale out, and it may hit ICE)."+noteMachine, unitShort).
		WithTarget(promInstant("A", "sum ("+fitCopies()+") or vector(0)", "")).
		Thresholds(thresholds("red", step{1, "green"})).ColorMode(common.BigValueColorModeBackground).Span(6)
}

func fitPerAZStat(id uint32) *stat.PanelBuilder {
	return multiStat(id, "Copies that fit per AZ", fitDesc+"Per AZ: placing copies where they fit keeps the fleet spread (AZ distribution on Reliability)."+noteMachine, unitShort).
		WithTarget(promInstant("A", sumBy([]string{lAZ}, fitCopies(lAZ)), "{{"+lAZ+"}}")).
		Thresholds(thresholds("red", step{1, "green"})).NoValue("No instance can take a copy").Span(6)
}

func fitTable(id uint32) *table.PanelBuilder {
	tb := tablePanel(id, "Where it fits",
		fitDesc+"One row per instance that can take at least one copy: its empty GPUs with enough free memory, and the copies they hold. "+
			"No row = no instance fits: scale out, or choose a smaller quantisation so a copy needs fewer GPUs or less memory."+noteMachine).
		Height(8).Span(12).SortBy(sortBy("Copies that fit", true)).NoValue("No instance can take a copy of this size now")
	by := withAccount(lHost, lType, lAZ, lEP)
	fits := fitCopies(by[1:]...) + " > 0"
	return columnsTable(tb, instanceCols(dashref.Capacity), []valueCol{
		{countBy(by, fitGPUs()) + " and on (" + labels(by...) + ") (" + fits + ")", "Usable GPUs", props(prop("unit", unitShort))},
		{fits, "Copies that fit", props(prop("unit", unitShort), cellBackground(), thresholdProp("transparent", step{1, "green"}))},
	})
}

// placementTable: which copy sits on which instance, with its GPUs and GPU memory.
func placementTable(id uint32) *table.PanelBuilder {
	by := withAccount(lEP, lIC, lCID, lHost, lAZ)
	owned := func(m string) string { return gpu(m, neq(lCID, ""), re(lFW, vFramework)) }
	tb := tablePanel(id, "Placement",
		"Which model copy (IC copy or single-model container) sits on which instance, with the GPUs it holds and the GPU memory they use. "+
			"Read with Where it fits: copies crowding one instance or AZ while others are empty is a placement to rebalance. Click an instance to filter by it."+
			notFiltered("GPU series carry no served model name.", dashref.VarModel)).
		Height(8).Span(12).SortBy(sortBy("Instance", false))
	return columnsTable(tb, []labelCol{
		endpointCol(dashref.Capacity), {lIC, "Inference component", nil}, {lCID, "Copy", nil},
		{lHost, "Instance", props(linksProp(instanceLink(dashref.Capacity, "${__value.raw}")))}, {lAZ, "AZ", nil},
	}, []valueCol{
		{countBy(by, owned(sc.DCGMGPUUtil)), "GPUs", props(prop("unit", unitShort))},
		{sumBy(by, owned(sc.DCGMFBUsed)) + mib, "GPU memory", props(prop("unit", unitBytes))},
	})
}

func gpuThermalPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "GPU temperature",
		"Hottest GPU core (solid) and its memory (dashed) per \"Aggregate by\" resource, °C. Normal under load: 40–75 °C. "+
			"Above about 85 °C GPUs throttle their clocks (see Clock throttling) and decode slows; a single GPU far hotter than its neighbours points at "+
			"its cooling or a failing board: drain that instance."+noteNoEngine, "celsius").
		WithTarget(promRange("A", byAgg("max", gpu(sc.DCGMGPUTemp)), "GPU {{$agg}}")).
		WithTarget(promRange("B", byAgg("max", gpu(sc.DCGMMemoryTemp)), "memory {{$agg}}")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}})}).
		Thresholds(thresholds("green", step{80, "orange"}, step{87, "red"})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).Span(8)
}

// throttledGPUs counts GPUs whose clocks are held back by heat or power (DCGM throttle-reason
// bits for power cap, HW slowdown, SW/HW thermal and power brake; idle is not counted).
func throttledGPUs() string {
	x := gpu(sc.DCGMThrottleReasons)
	var bits []string
	for _, b := range []int{sc.ThrottleSWPowerCap, sc.ThrottleHWSlowdown, sc.ThrottleSWThermal, sc.ThrottleHWThermal, sc.ThrottleHWPowerBrake} {
		bits = append(bits, fmt.Sprintf("floor(%s / %d) %% 2", x, b))
	}
	return byAgg("count", "("+strings.Join(bits, " + ")+") > 0")
}

func throttlePanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Clock throttling",
		"GPUs whose clocks are held back by heat or power (DCGM clock-throttle reasons: thermal, power cap, HW slowdown), per \"Aggregate by\" resource, "+
			"and the lowest SM clock among busy GPUs (MHz, right axis). Normal: no throttled GPU, clocks at their maximum under load. "+
			"A throttled GPU runs its copy's tokens slower than its siblings (check ITL per instance); persistent thermal throttling = cooling problem: drain the instance."+noteNoEngine, unitShort).
		WithTarget(promRange("A", throttledGPUs(), "throttled GPUs {{$agg}}")).
		WithTarget(promRange("B", byAgg("min", gpu(sc.DCGMSMClock)+" and on ("+label(sc.LabelGPUUUID)+") "+gpu(sc.DCGMGPUUtil)+" > 0"), "SM clock {{$agg}}")).
		OverrideByQuery("A", []dashboard.DynamicConfigValue{colorProp("red"), prop("custom.drawStyle", "bars"), prop("custom.fillOpacity", 80)}).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{prop("unit", "rotmhz"), prop("custom.axisPlacement", "right")}).
		Min(0).Span(8)
}

func powerPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Power draw vs limit",
		"Board power as a share of its power limit, per \"Aggregate by\" resource (sum of draw / sum of limits). High under load is normal; "+
			"pinned at 100 % the GPU is power-capped and may throttle (see Clock throttling). Near idle power on a resource that should serve traffic = nothing reaches it."+noteNoEngine, unitPercent).
		WithTarget(promRange("A", "100 * "+byAgg("sum", gpu(sc.DCGMPowerUsage))+" / "+byAgg("sum", gpu(sc.DCGMPowerLimit)), "{{$agg}}")).
		Min(0).Max(100).Span(8)
}

func smPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "SM active and occupancy",
		"Share of time the streaming multiprocessors had work (SM active) and how full they were (occupancy), averaged per \"Aggregate by\" resource. "+
			"GPU utilisation can read 100 % while SM active is low: the GPU is busy with few, small kernels (small batches). "+
			"Low occupancy with high SM active = memory-bound decode, normal for LLMs; both low under load = the engine is starved (check batch size, CPU)."+noteNoEngine, unitRatio).
		WithTarget(promRange("A", byAgg("avg", gpu(sc.DCGMSMActive)), "SM active {{$agg}}")).
		WithTarget(promRange("B", byAgg("avg", gpu(sc.DCGMSMOccupancy)), "occupancy {{$agg}}")).
		Min(0).Max(1).Span(12)
}

func interconnectPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "PCIe and NVLink throughput",
		"Host↔GPU PCIe traffic (receive and transmit) and NVLink traffic per \"Aggregate by\" resource, where DCGM exports them (GPUs without NVLink, such as A10G, have no NVLink series). "+
			"PCIe spikes during model loads are normal; sustained PCIe near the link's limit while GPUs idle = offloading (KV or weights) over PCIe; "+
			"for tensor-parallel copies NVLink carries the all-reduce traffic."+noteNoEngine, "Bps").
		WithTarget(promRange("A", byAgg("sum", gpu(sc.DCGMPCIeRXBytes)), "PCIe RX {{$agg}}")).
		WithTarget(promRange("B", byAgg("sum", gpu(sc.DCGMPCIeTXBytes)), "PCIe TX {{$agg}}")).
		WithTarget(promRange("C", byAgg("sum", rate(gpu(sc.DCGMNVLinkBandwidth), rateWindow)), "NVLink {{$agg}}")).
		Min(0).Span(12)
}

// gpuErrorsTable lists GPUs with any XID or ECC error in the range; every column is limited
// to the same GPUs, so the columns merge row by row.
func gpuErrorsTable(id uint32) *table.PanelBuilder {
	by := withAccount(lHost, lType, lAZ, lEP, sc.LabelGPU)
	overRange := func(m string) string { return maxBy(by, "max_over_time("+gpu(m)+rangeWindow+")") }
	failing := "(" + overRange(sc.DCGMXIDErrors) + " > 0 or " + overRange(sc.DCGMECCDBEVolatile) + " > 0 or " +
		"(" + overRange(sc.DCGMECCSBEVolatile) + " - " + maxBy(by, "min_over_time("+gpu(sc.DCGMECCSBEVolatile)+rangeWindow+")") + ") > 0)"
	only := func(e string) string { return e + " and on (" + labels(by...) + ") " + failing }
	tb := tablePanel(id, "GPU errors (XID, ECC)",
		"GPUs that reported an error in the time range: the last XID code (48 = double-bit ECC error, 79 = fell off the bus, 63/64 = row remapping, 13/31/43 = application faults), "+
			"uncorrectable (double-bit) and corrected (single-bit) ECC errors since the driver loaded, and the hottest temperature. "+
			"Any uncorrectable ECC error or a hardware XID (48, 63, 64, 74, 79) = replace the instance: drain it and let autoscaling start another. "+
			"Corrected errors climbing fast are an early warning of the same. Empty = no GPU errors."+noteNoEngine).
		NoValue("No XID or ECC errors on any GPU in the range").Height(8).SortBy(sortBy("Uncorrectable ECC", true))
	return columnsTable(tb, append(instanceCols(dashref.Capacity), labelCol{sc.LabelGPU, "GPU", nil}), []valueCol{
		{only(overRange(sc.DCGMXIDErrors)), "Last XID", props(prop("unit", unitShort), cellBackground(), thresholdProp("transparent", step{1, "red"}))},
		{only(overRange(sc.DCGMECCDBEVolatile)), "Uncorrectable ECC", props(prop("unit", unitShort), cellBackground(), thresholdProp("transparent", step{1, "red"}))},
		{only(overRange(sc.DCGMECCSBEVolatile)), "Corrected ECC", props(prop("unit", unitShort), cellBackground(), thresholdProp("transparent", step{1, "orange"}))},
		{only(overRange(sc.DCGMGPUTemp)), "Max temperature", props(prop("unit", "celsius"))},
	})
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
		"0 with rising load means the next scale-out needs new instances (and may hit ICE)."+noteMachine, unitShort).
		WithTarget(promInstant("A", "sum ("+freeGPUs([]string{lHost})+")", "")).
		Thresholds(thresholds("orange", step{1, "green"})).ColorMode(common.BigValueColorModeBackground)
}

func freeGPUMemStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Free GPU memory", "Framebuffer free across the selected GPUs. A model copy needs at least its weights plus KV cache here, on GPUs of one instance."+noteMachine, unitBytes).
		WithTarget(promInstant("A", "sum ("+host(sc.DCGMFBFree)+")"+mib, "")).Thresholds(thresholds("blue"))
}

func emptyInstancesStat(id uint32) *stat.PanelBuilder {
	withCopies := countBy([]string{lHost}, host(sc.DCGMGPUUtil, neq(lIC, "")))
	return statPanel(id, "Instances without IC copies", "IC endpoints: instances hosting no inference-component copy, paid for and idle. "+
		"Normal: 0 after scale-in settles. Persistently above 0 = scale-in of instances lags copies; on single-model endpoints every instance counts here, ignore it."+noteMachine, unitShort).
		WithTarget(promInstant("A", "count ("+countBy([]string{lHost}, host(sc.DCGMGPUUtil))+" unless "+withCopies+")", "")).
		NoValue("0").Thresholds(thresholds("green", step{1, "orange"}))
}

func fleetGPUMemStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "GPU memory used", "Framebuffer used / total across the selection. Above 89 % there is little VRAM left for another model's weights."+noteMachine, unitPercent).
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
			"No row fits → scale out instances first. Click an instance to filter the dashboard by it."+noteMachine).
		Height(10).SortBy(sortBy("Free GPU memory", true))
	return columnsTable(tb, instanceCols(dashref.Capacity), []valueCol{
		gpusCol(host),
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
			"a slow ramp over days is KV/fragmentation growth approaching the limit."+noteNoEngine, unitBytes).
		WithTarget(promRange("A", byAgg("sum", gpu(sc.DCGMFBUsed))+mib, "{{$agg}}")).Min(0).Span(8)
}

func diskIOPanel(id uint32) *timeseries.PanelBuilder {
	return timeseriesPanel(id, "Disk busy time",
		"Share of time each host's disks were busy. Periodic spikes aligned with scale-outs = model downloads during cold starts; "+
			"long plateaus near 100 % slow cold starts down (consider caching artifacts on instance storage)."+noteMachine, unitRatio).
		WithTarget(promRange("A", byAgg("max", rate(host(sc.NodeDiskIOTimeSeconds), rateWindow)), "{{$agg}}")).Min(0).Span(8)
}
