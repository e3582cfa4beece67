package cost

import (
	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// The labels GPUs and tokens are grouped by.
var (
	gpuGroups   = []string{sc.LabelAccount, sc.LabelEndpoint, sc.LabelHostID, sc.LabelHostType, sc.LabelInferenceComp, sc.LabelContainerID}
	tokenGroups = []string{sc.LabelAccount, sc.LabelEndpoint, sc.LabelInferenceComp, sc.LabelContainerID, sc.LabelModelName}
)

// Exprs are the PromQL of the inputs: GPUs per holder (a range query on the step grid),
// and each copy's output and input tokens over window (instant queries at the range's end,
// window written as PromQL, e.g. "2h"). matchers narrow every selector.
type Exprs struct{ GPUs, Output, Input string }

// ExprsFor writes the input queries.
func ExprsFor(window string, matchers ...string) Exprs {
	tokens := func(p px.EnginePair) string {
		return px.Agg("sum", tokenGroups, px.Or("increase("+px.Sel(p.VLLM, matchers...)+"["+window+"])", "increase("+px.Sel(p.SGLang, matchers...)+"["+window+"])"))
	}
	return Exprs{
		GPUs:   px.Agg("count", gpuGroups, px.Sel(sc.DCGMGPUUtil, matchers...)),
		Output: tokens(px.GenerationTokens), Input: tokens(px.PromptTokens),
	}
}

// GPUsOf reads a GPU series' labels (the GPUs expression's grouping).
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
