// Package starters lists the query editor's starter queries: one question each about a
// SageMaker fleet, written the way CloudWatch's PromQL answers it (sum_over_time on the delta
// vended metrics, rate only on the engines' cumulative counters and native histograms,
// quoted dotted labels). The editor offers them when a query is empty and in its help panel
// (src/starters.json, written by go generate); rig/itest/dashboards runs each one through the
// checks the dashboards' queries pass and against the emulator's fleet.
package starters

//go:generate go run ../internal/frontendjson -o ../../src/starters.json starters

import (
	"encoding/json"

	q "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Query is one starter: a title, the PromQL and one line on why it is written so.
type Query struct {
	Title string `json:"title"`
	Expr  string `json:"expr"`
	Note  string `json:"note"`
}

// PhaseLabel names the cold-start phase a series of the cold-start starter belongs to.
const PhaseLabel = "phase"

// rated is rate() over Grafana's rate interval, for cumulative counters and native histograms.
func rated(metric string) string { return "rate(" + metric + "[$__rate_interval])" }

// delta sums a delta metric's samples over the step, the CloudWatch reading of a vended count.
func delta(metric string) string { return "sum_over_time(" + metric + "[$__interval])" }

func p99(by []string, pair q.EnginePair) string {
	return "histogram_quantile(0.99, " + q.Agg("sum", by, pair.Each(rated)) + ")"
}

// ratio is 100 × num / den, both summed by the same labels.
func ratio(by []string, num, den string) string {
	return "100 * " + q.Agg("sum", by, num) + " / " + q.Agg("sum", by, den)
}

func coldStartPhases() string {
	phases := []struct{ metric, name string }{
		{sc.ModelDownloadTime, "model download"},
		{sc.GPULoadTime, "GPU load"},
		{sc.ContainerStartTime, "container start"},
	}
	var each []string
	for _, p := range phases {
		// Events are sparse samples: the latest one in the dashboard's range.
		each = append(each, q.Tag("last_over_time("+p.metric+"[$__range])", PhaseLabel, p.name))
	}
	return q.Agg("max", []string{sc.LabelInferenceComp, PhaseLabel}, q.Or(each...))
}

var (
	byIC       = []string{sc.LabelInferenceComp}
	byHost     = []string{sc.LabelHostID}
	byEndpoint = []string{sc.DimEndpointName}
	// byEndpointLabel is the engines' endpoint label; the vended metrics carry EndpointName.
	byEndpointLabel = []string{sc.LabelEndpoint}
)

// bare reads a gauge as it is.
func bare(metric string) string { return metric }

var list = []Query{
	{
		Title: "Time to first token, P99 per inference component (s)",
		Expr:  p99(byIC, q.TTFT),
		Note:  "Engine histograms are native and cumulative, so rate() is right; vLLM and SGLang are read together.",
	},
	{
		Title: "Inter-token latency, P99 per inference component (s)",
		Expr:  p99(byIC, q.ITL),
		Note:  "Time between streamed tokens: what a chat user feels as stutter.",
	},
	{
		Title: "KV cache use per copy (%)",
		Expr:  "100 * " + q.Agg("max", []string{sc.LabelInferenceComp, sc.LabelContainerID}, q.KVUsage.Each(bare)),
		Note:  "One series per IC copy (container); near 100% requests queue or get preempted.",
	},
	{
		Title: "Invocations per availability zone",
		Expr:  q.Agg("sum", []string{sc.DimAvailabilityZone}, delta(sc.InvocationsByAzByInstanceType)),
		Note:  "Vended counts are deltas: sum_over_time over the step, never rate().",
	},
	{
		Title: "5XX share of invocations per endpoint (%)",
		Expr:  ratio(byEndpoint, delta(sc.Invocation5XXErrors), delta(sc.Invocations)),
		Note:  "Both sides are delta counts summed over the same step.",
	},
	{
		Title: "GPU memory used per instance (%)",
		Expr:  "100 * " + q.Agg("sum", byHost, sc.DCGMFBUsed) + " / (" + q.Agg("sum", byHost, sc.DCGMFBUsed) + " + " + q.Agg("sum", byHost, sc.DCGMFBFree) + ")",
		Note:  "DCGM frame-buffer gauges (MiB): used / (used + free).",
	},
	{
		Title: "Cold-start phases per inference component (s)",
		Expr:  coldStartPhases(),
		Note:  "Provisioning events (download, GPU load, container start), latest in the range.",
	},
	{
		Title: "Model latency, average per endpoint (ms)",
		Expr:  "histogram_avg(" + q.Agg("sum", byEndpoint, delta(sc.ModelLatency)) + ") / 1000",
		Note:  "A delta histogram in microseconds: sum_over_time, then histogram_avg.",
	},
	{
		Title: "Running and waiting requests per endpoint",
		Expr:  q.Or(q.Tag(q.Agg("sum", byEndpointLabel, q.Running.Each(bare)), "state", "running"), q.Tag(q.Agg("sum", byEndpointLabel, q.Waiting.Each(bare)), "state", "waiting")),
		Note:  "Engine gauges; a growing waiting line means the endpoint needs more copies.",
	},
	{
		Title: "Output tokens per second per instance",
		Expr:  q.Agg("sum", byHost, q.GenerationTokens.Each(rated)),
		Note:  "Cumulative engine counters: rate() is right here.",
	},
	{
		Title: "GPU utilisation per instance (%)",
		Expr:  q.Agg("avg", byHost, sc.DCGMGPUUtil),
		Note:  "DCGM gauge, averaged over the GPUs of each instance.",
	},
}

// List is the starter queries, in the order the editor offers them.
func List() []Query { return append([]Query(nil), list...) }

// JSON is List for the frontend (src/starters.json).
func JSON() ([]byte, error) {
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
