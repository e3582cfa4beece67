package cost

import (
	"slices"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// The labels GPUs and tokens are grouped by.
var (
	instanceGroups = []string{sc.LabelAccount, sc.LabelEndpoint, sc.LabelHostID, sc.LabelHostType}
	gpuGroups      = slices.Concat(instanceGroups, []string{sc.LabelInferenceComp, sc.LabelContainerID})
	// One GPU of one instance, whoever holds it (account and host id name the instance).
	gpuIdentity = []string{sc.LabelAccount, sc.LabelHostID, sc.LabelGPU}
	tokenGroups = []string{sc.LabelAccount, sc.LabelEndpoint, sc.LabelInferenceComp, sc.LabelContainerID, sc.LabelModelName}
)

// Exprs are the PromQL of the inputs: GPUs per holder and distinct GPUs per instance (range
// queries on the step grid), and each copy's output and input tokens over window (instant
// queries at the range's end, window written as PromQL, e.g. "2h").
type Exprs struct{ GPUs, Instances, Output, Input string }

// ExprsFor writes the input queries. instance matchers (endpoint, account) narrow every
// selector: they keep or drop whole instances. holder matchers (inference component) narrow
// only whose GPUs and tokens are read, never an instance's GPU total, so a copy's share of
// its instances is the same with or without them.
//
// Series are not GPUs: when a GPU changes holder, the old holder's series stays visible for
// the lookback (5 minutes) next to the new one's. So an instance's GPUs are its distinct gpu
// labels, and a GPU shown by several holders at a step is held by the one whose sample is
// the newest (timestamp() reads a sample's own time, not the step's).
func ExprsFor(window string, instance, holder []string) Exprs {
	both := slices.Concat(instance, holder)
	inst := px.Sel(sc.DCGMGPUUtil, instance...)
	held := "timestamp(" + px.Sel(sc.DCGMGPUUtil, both...) + ")"
	newest := px.Agg("max", gpuIdentity, "timestamp("+inst+")")
	tokens := func(p px.EnginePair) string {
		return px.Agg("sum", tokenGroups, px.Or("increase("+px.Sel(p.VLLM, both...)+"["+window+"])", "increase("+px.Sel(p.SGLang, both...)+"["+window+"])"))
	}
	return Exprs{
		GPUs:      px.Agg("count", gpuGroups, held+" == on ("+px.Labels(gpuIdentity...)+") group_left () "+newest),
		Instances: px.Agg("count", instanceGroups, px.Agg("count", slices.Concat(instanceGroups, []string{sc.LabelGPU}), inst)),
		Output:    tokens(px.GenerationTokens), Input: tokens(px.PromptTokens),
	}
}

// GPUsOf reads a GPU series' labels (the GPUs or the Instances expression's grouping).
func GPUsOf(labels func(string) string, t []int64, n []float64) GPUs {
	return GPUs{Account: labels(sc.LabelAccount), Endpoint: labels(sc.LabelEndpoint), Host: labels(sc.LabelHostID), InstanceType: labels(sc.LabelHostType),
		IC: labels(sc.LabelInferenceComp), Copy: labels(sc.LabelContainerID), T: t, N: n}
}

// TokensOf reads a token series' labels and value, as output or input tokens.
func TokensOf(labels func(string) string, v float64, input bool) Tokens {
	t := Tokens{Account: labels(sc.LabelAccount), Endpoint: labels(sc.LabelEndpoint), IC: labels(sc.LabelInferenceComp), Copy: labels(sc.LabelContainerID), Model: labels(sc.LabelModelName)}
	if input {
		t.Input = v
	} else {
		t.Output = v
	}
	return t
}
