package builder

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Health states shared by the tiles and the tables' state columns: 0 OK, 1 warning, 2 critical.
// Each signal is (x >= bool warn) + (x >= bool crit), tagged with its name so the `or` keeps
// every signal, and the tile shows the worst one.
func levels(expr string, warn, crit string) string {
	return "(" + expr + " >= bool " + warn + ") + (" + expr + " >= bool " + crit + ")"
}

// signalLabel tells the signals apart inside a tile query.
const signalLabel = "signal"

// Performance thresholds (the spec's signals): KV cache fill, queueing, TTFT.
const (
	kvWarn, kvCrit     = "0.8", "0.95"
	ttftWarn, ttftCrit = "2", "5" // seconds at the selected percentile
)

// perfState is the worst performance signal per resource of the aggregation level.
func perfState(byExpr func(op, expr string) string) string {
	var parts []string
	for _, m := range []string{kvPair.VLLM, kvPair.SGLang} {
		parts = append(parts, tag(levels(engine(m), kvWarn, kvCrit), signalLabel, "kv_cache"))
	}
	// Requests waiting at all is a warning; more waiting than running is critical.
	for _, m := range []struct{ wait, run string }{{sc.VLLMWaiting, sc.VLLMRunning}, {sc.SGLangQueued, sc.SGLangRunning}} {
		parts = append(parts, tag("("+engine(m.wait)+" > bool 0) + ("+engine(m.wait)+" > bool "+engine(m.run)+")", signalLabel, "queue"))
	}
	for _, m := range []string{ttftPair.VLLM, ttftPair.SGLang} {
		q := "histogram_quantile(" + vPercentile + ", " + byExpr("sum", rate(engine(m), rateWindow)) + ")"
		parts = append(parts, tag(levels(q, ttftWarn, ttftCrit), signalLabel, "ttft"))
	}
	return byExpr("max", or(parts...))
}

const perfTilesDesc = `One tile per resource at the "Aggregate by" level (instances, IC copies or endpoints). ` +
	`CloudWatch alarm state per endpoint and IC is in "Alarm health" above; these tiles judge every resource by thresholds on its engine signals, alarm or not: ` +
	`green = OK; orange = KV cache ≥ 80 %, requests waiting, or TTFT at the selected percentile ≥ 2 s; ` +
	`red = KV cache ≥ 95 %, more requests waiting than running, or TTFT ≥ 5 s. ` +
	`No tile (or "No engine signal") means the container emits no vLLM/SGLang metrics (for example DJL): nothing to judge, like "no alarm configured". ` +
	`Stat tiles have no tooltip in core Grafana: the fields a hover would show (instance type, TTFT, output tokens/s, concurrent requests, KV cache, state) are the columns of "Instance performance" below, one row per instance. ` +
	`Tiles are grouped by instance type and AZ and named resource · AZ · account (the type is in the table below; the AZ names the region), as the managed honeycomb groups by AZ: a red cluster in one AZ points at that AZ. ` +
	`Click a tile to filter the whole dashboard by its instance (when aggregated by instances) or by its AZ. Next: a red tile → check its row below, then Engine pressure.`

// perfTiles is the Performance health grid.
func perfTiles(id uint32) *stat.PanelBuilder {
	return tilesPanel(id, "Fleet health", perfTilesDesc, unitShort).
		WithTarget(promInstant("A", perfState(func(op, e string) string { return byAgg(op, e, tileGroups...) }), tileLegend("{{$agg}}"))).
		Mappings(stateMappings("OK", "Warning", "Critical")).
		Thresholds(stateThresholds()).NoValue("No engine signal").Decimals(0).
		OverrideByRegexp(".*", []dashboard.DynamicConfigValue{linksProp(instanceLink(dashref.Performance, fieldLabel(lHost)), azLink(dashref.Performance))})
}

// Capacity thresholds: utilisation % of GPU, GPU memory, CPU, memory, disk.
const (
	capWarn, capCrit = 80.0, 95.0
)

// Tiles are grouped like the managed honeycomb: by instance type and AZ as well, and by
// account, so that same-named endpoints of two accounts are two tiles.
var tileGroups = withAccount(lType, lAZ)

// tileLegend names a tile by its resource, AZ (which names the region) and account, so that
// same-named endpoints of two accounts are told apart; the instance type is in the tables
// below (a name longer than a tile is cut, and the resource id is what a user looks for).
func tileLegend(resource string) string {
	return resource + " · {{" + lAZ + "}} · {{" + lAccount + "}}"
}

// azLink filters a dashboard by the AZ of the clicked tile.
func azLink(uid string) map[string]any {
	return link("Filter by this AZ", drillURL(uid, setVar{dashref.VarAZ, fieldLabel(lAZ)}))
}

// capacitySignals are utilisation percentages per group, tagged by signal.
func capacitySignals(by []string) map[string]string {
	return map[string]string{
		"gpu":        avgBy(by, host(sc.DCGMGPUUtil)),
		"gpu_memory": gpuMemPercent(by),
		"cpu":        cpuPercent(by),
		"memory":     memPercent(by),
		"disk":       diskPercent(by),
	}
}

// capacityState is the worst utilisation per instance.
func capacityState() string {
	by := append([]string{lHost}, tileGroups...)
	sig := capacitySignals(by)
	var parts []string
	for _, name := range []string{"gpu", "gpu_memory", "cpu", "memory", "disk"} {
		parts = append(parts, tag(sig[name], signalLabel, name))
	}
	return maxBy(by, or(parts...))
}

const capTilesDesc = `One tile per instance (named instance · AZ · account; the type is in the table below) showing its highest utilisation among GPU, GPU memory, CPU, memory and disk. ` +
	`Colour is thresholds on utilisation (CloudWatch alarm state is on the Performance dashboard's "Alarm health"): green < 80 %, orange 80–95 %, red ≥ 95 % (GPU memory at 89 % already leaves little VRAM for another model's weights; vLLM pre-allocates about 90 % for its KV cache, so orange is normal on vLLM hosts). ` +
	`The five values behind each tile are the columns of "Headroom and placement" below. ` +
	`Normal: mixed green/orange under load. Bad: many red tiles on one signal → the fleet is short of that resource; add instances before placing models. ` +
	`Click a tile to filter the dashboard by that instance or its AZ.`

func capacityTiles(id uint32) *stat.PanelBuilder {
	return tilesPanel(id, "Capacity health", capTilesDesc+noteMachine, unitPercent).
		WithTarget(promInstant("A", capacityState(), tileLegend("{{"+lHost+"}}"))).
		Thresholds(thresholds("green", step{capWarn, "orange"}, step{capCrit, "red"})).
		Min(0).Max(100).Decimals(0).NoValue("No instances in the selection").
		OverrideByRegexp(".*", []dashboard.DynamicConfigValue{linksProp(instanceLink(dashref.Capacity, fieldLabel(lHost)), azLink(dashref.Capacity))})
}

// Utilisation formulas, shared by tiles, tables and time series.

func gpuMemPercent(by []string) string {
	used := sumBy(by, host(sc.DCGMFBUsed))
	return "100 * " + used + " / (" + used + " + " + sumBy(by, host(sc.DCGMFBFree)) + ")"
}

func cpuPercent(by []string) string {
	return "100 * (1 - " + avgBy(by, rate(host(sc.NodeCPUSeconds, eq(sc.LabelCPUMode, sc.CPUModeIdle)), rateWindow)) + ")"
}

func memPercent(by []string) string {
	return "100 * (1 - " + sumBy(by, host(sc.NodeMemAvailable)) + " / " + sumBy(by, host(sc.NodeMemTotal)) + ")"
}

// diskPercent sums all filesystems: which mountpoint SageMaker uses for models is not documented.
func diskPercent(by []string) string {
	return "100 * (1 - " + sumBy(by, host(sc.NodeFilesystemAvail)) + " / " + sumBy(by, host(sc.NodeFilesystemSize)) + ")"
}
