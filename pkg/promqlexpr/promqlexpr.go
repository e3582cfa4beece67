// Package promqlexpr writes PromQL text the way CloudWatch's PromQL API accepts it: every
// selector names its metric, dotted and '@' label names (the OTel/SageMaker ones) are
// double-quoted in matchers and grouping lists, and the vLLM and SGLang metrics that answer the
// same question are paired once. The dashboards builder and the diagnosis rules share it, so a
// query on a panel and the one a diagnosis finding cites are written the same way.
package promqlexpr

import (
	"regexp"
	"strconv"
	"strings"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// legacyName matches names PromQL accepts unquoted. Anything else must be quoted: CloudWatch
// rejects a bare dotted name and silently matches nothing for an underscore spelling.
var legacyName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Label writes a label name for a matcher or a by/on list, quoted when it needs to be.
func Label(name string) string {
	if legacyName.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

// Labels writes a comma-separated list of label names.
func Labels(names ...string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = Label(n)
	}
	return strings.Join(out, ", ")
}

// By writes a grouping clause, `by (a, "b.c")`.
func By(names ...string) string { return "by (" + Labels(names...) + ")" }

// Matchers. The value is a PromQL string literal (escaped); Grafana template variables such
// as $endpoint pass through unchanged because '$' needs no escaping.
func Eq(name, value string) string  { return matcher(name, "=", value) }
func Re(name, value string) string  { return matcher(name, "=~", value) }
func Neq(name, value string) string { return matcher(name, "!=", value) }

func matcher(name, op, value string) string { return Label(name) + op + strconv.Quote(value) }

// Sel writes a selector that always names its metric (CloudWatch rejects selectors without
// one); a metric name PromQL cannot write bare goes quoted inside the braces.
func Sel(metric string, matchers ...string) string {
	if !legacyName.MatchString(strings.ReplaceAll(metric, ":", "_")) {
		return "{" + strings.Join(append([]string{strconv.Quote(metric)}, matchers...), ", ") + "}"
	}
	if len(matchers) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(matchers, ", ") + "}"
}

// Agg writes `op by (labels) (expr)`, or `op (expr)` without labels.
func Agg(op string, by []string, expr string) string {
	if len(by) == 0 {
		return op + " (" + expr + ")"
	}
	return op + " " + By(by...) + " (" + expr + ")"
}

// Or joins alternatives with `or`.
func Or(exprs ...string) string { return strings.Join(exprs, " or ") }

// Tag adds a constant label, so that otherwise identical label sets survive an `or` and the
// reader can tell which alternative a series came from.
func Tag(expr, name, value string) string {
	return "label_replace(" + expr + ", " + strconv.Quote(name) + ", " + strconv.Quote(value) + `, "", "")`
}

// EnginePair is one question asked of vLLM and of SGLang: the metric name in each engine.
type EnginePair struct{ VLLM, SGLang string }

// Each writes f for both engines' metrics and joins them with `or` (their label sets differ,
// so nothing is dropped).
func (p EnginePair) Each(f func(metric string) string) string { return Or(f(p.VLLM), f(p.SGLang)) }

// The engine metric pairs the dashboards and the diagnosis rules read.
var (
	TTFT             = EnginePair{sc.VLLMTTFT, sc.SGLangTTFT}
	ITL              = EnginePair{sc.VLLMITL, sc.SGLangITL}
	E2E              = EnginePair{sc.VLLME2E, sc.SGLangE2E}
	Running          = EnginePair{sc.VLLMRunning, sc.SGLangRunning}
	Waiting          = EnginePair{sc.VLLMWaiting, sc.SGLangQueued}
	KVUsage          = EnginePair{sc.VLLMKVCacheUsage, sc.SGLangTokenUsage}
	PromptTokens     = EnginePair{sc.VLLMPromptTokens, sc.SGLangPromptTokens}
	GenerationTokens = EnginePair{sc.VLLMGenerationTokens, sc.SGLangGenerationTokens}
	QueueTime        = EnginePair{sc.VLLMQueueTime, sc.SGLangQueueTime}
	// Preemptions: vLLM counts preempted requests (a counter), SGLang reports the requests it
	// retracted (a gauge); readers aggregate each accordingly.
	Preemptions = EnginePair{sc.VLLMPreemptions, sc.SGLangRetracted}
)
