package cost

import (
	"slices"
	"strconv"
	"time"

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
// queries at the range's end, window written as PromQL, e.g. "2h"). Narrowed: the holder
// matchers read only some holders' GPUs (a component filter). EndpointTags and ICTags are
// TagKey's values per resource (range queries; WithTags), "" when not grouped by a tag.
type Exprs struct {
	GPUs, Instances, Output, Input string
	Narrowed                       bool
	TagKey, EndpointTags, ICTags   string
}

// noGPULabel marks an Instances series that counts an instance whose DCGM series lack the
// gpu label (its distinct GPUs cannot be told apart).
const noGPULabel = "inferscope_no_gpu_label"

// ExprsFor writes the input queries for a step. instance matchers (endpoint, account)
// narrow every selector: they keep or drop whole instances. holder matchers (inference
// component) narrow only whose GPUs and tokens are read, never an instance's GPU total, so
// a copy's share of its instances is the same with or without them.
//
// Series are not GPUs: when a GPU changes holder, the old holder's series stays visible for
// the lookback (5 minutes) next to the new one's. So an instance's GPUs are its distinct gpu
// labels, and a GPU shown by several holders at a step is held by the one whose sample is
// the newest (timestamp() reads a sample's own time, not the step's). And a GPU counts at
// a step only with a sample in the step before it, so an instance that stops is not billed
// for the lookback after its last sample.
//
// The DCGM metric is scanned three times per range: twice by GPUs (the holders and the
// newest sample of each GPU), once by Instances.
func ExprsFor(window string, step time.Duration, instance, holder []string) Exprs {
	fresh := func(sel string) string {
		return "(timestamp(" + sel + ") > time() - " + strconv.FormatFloat(step.Seconds(), 'f', -1, 64) + ")"
	}
	both := slices.Concat(instance, holder)
	inst := px.Sel(sc.DCGMGPUUtil, instance...)
	newest := px.Agg("max", gpuIdentity, "timestamp("+inst+")")
	perGPU := px.Agg("count", slices.Concat(instanceGroups, []string{sc.LabelGPU}), fresh(inst))
	tokens := func(p px.EnginePair) string {
		return px.Agg("sum", tokenGroups, px.Or("increase("+px.Sel(p.VLLM, both...)+"["+window+"])", "increase("+px.Sel(p.SGLang, both...)+"["+window+"])"))
	}
	return Exprs{
		GPUs: px.Agg("count", gpuGroups, fresh(px.Sel(sc.DCGMGPUUtil, both...))+" == on ("+px.Labels(gpuIdentity...)+") group_left () "+newest),
		// Series without a gpu label all fall in one gpu="" group: marked, not counted as a GPU.
		Instances: px.Agg("count", slices.Concat(instanceGroups, []string{noGPULabel}),
			`label_replace(`+perGPU+`, "`+noGPULabel+`", "1", "`+sc.LabelGPU+`", "")`),
		Output: tokens(px.GenerationTokens), Input: tokens(px.PromptTokens),
		Narrowed: len(holder) > 0,
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
