package builder

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/stat"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Summary stats shared by the dashboards' top rows.

func invocationsStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Invocations", "Requests served in the time range (sum of the delta Invocations metric). "+
		"Normal: tracks your traffic. A drop to near zero with instances up means clients cannot reach the endpoint: check Errors and Traffic distribution."+noteNoEngine, unitShort).
		WithTarget(promInstant("A", scopedCount(invocationsV, nil, rangeWindow), "")).
		NoValue(noVended).Thresholds(thresholds("blue"))
}

func instancesStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Instances", "Instances currently serving (one node-exporter series each). "+
		"With an inference component selected: the instances hosting its copies. "+
		"Compare with the desired count of your scaling policy; fewer means instances failed to launch (see Reliability → ICE)."+noteNoEngine, unitShort).
		WithTarget(promInstant("A", "count ("+instanceSeries()+")", "")).
		NoValue("0").Thresholds(thresholds("blue"))
}

func icsStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Inference components", "Inference components with at least one copy on a GPU. "+
		"0 on single-model endpoints, which is normal: their IC panels show an explicit empty state."+noteNoEngine, unitShort).
		WithTarget(promInstant("A", "count ("+countBy(withAccount(lEP, lIC), gpu(sc.DCGMGPUUtil, neq(lIC, "")))+")", "")).
		NoValue("0").Thresholds(thresholds("blue"))
}

func gpusStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "GPUs", "Accelerators reporting DCGM metrics (one series per GPU). "+
		"With an inference component selected: the GPUs its copies hold. "+
		"If it is lower than instances × GPUs per instance type, a GPU dropped off the bus or its exporter failed: check the instance."+noteNoEngine, unitShort).
		WithTarget(promInstant("A", "count ("+gpu(sc.DCGMGPUUtil)+")", "")).
		NoValue("0").Thresholds(thresholds("blue"))
}

// azSkewExpr is 100·(max − min)/max of instances per AZ, per endpoint (of each account),
// averaged over endpoints (0 % = balanced across the AZs in use).
func azSkewExpr() string {
	by := withAccount(lEP)
	perAZ := instancesPerAZ(by...)
	return "avg (100 * (" + maxBy(by, perAZ) + " - " + agg("min", by, perAZ) + ") / " + maxBy(by, perAZ) + ")"
}

func azSkewStat(id uint32) *stat.PanelBuilder {
	return statPanel(id, "Avg AZ skew", "Instances per AZ, (max − min) / max per endpoint, averaged over endpoints: 0 % = balanced. "+
		"Above 50 % one AZ carries most of an endpoint: a single-AZ outage removes most capacity. Check Reliability → AZ distribution."+noteNoEngine, unitPercent).
		WithTarget(promInstant("A", azSkewExpr(), "")).
		Thresholds(thresholds("green", step{25, "orange"}, step{50, "red"})).Decimals(0).
		ColorMode(common.BigValueColorModeBackground)
}
