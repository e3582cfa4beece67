package health

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Label and dimension names that name a resource: the OTel attributes of the engine and DCGM
// series, and the CloudWatch dimensions of the vended metrics (also labels of their enriched
// series).
var (
	endpointNames  = []string{semconv.DimEndpointName, semconv.LabelEndpoint}
	componentNames = []string{semconv.DimInferenceComponentName, semconv.LabelInferenceComp}
	instanceNames  = []string{semconv.DimInstanceID, semconv.LabelHostID}
	accountNames   = []string{semconv.LabelAccount}
)

// target is what an alarm, or one series of it, is about; empty fields are unknown. The
// account alone names no resource.
type target struct{ endpoint, component, instance, account string }

func (t target) empty() bool { return t.endpoint == "" && t.component == "" && t.instance == "" }

// within fills in what a series' labels leave out from what its alarm names: a by-instance
// alarm scoped to one endpoint names the endpoint, its series only the instance; a series
// without @aws.account is in the alarm's account.
func (t target) within(named target) target {
	t.endpoint, t.component = cmp.Or(t.endpoint, named.endpoint), cmp.Or(t.component, named.component)
	t.account = cmp.Or(t.account, named.account)
	return t
}

// fromLabels reads a target from dimensions or series labels.
func fromLabels(m map[string]string) target {
	first := func(names []string) string {
		for _, n := range names {
			if v := m[n]; v != "" {
				return v
			}
		}
		return ""
	}
	return target{endpoint: first(endpointNames), component: first(componentNames), instance: first(instanceNames), account: first(accountNames)}
}

// equalityMatcher finds `name="value"` and `name=~"value"` matchers in PromQL, the name bare
// or quoted (dotted and '@' names must be), the value in double or single quotes. `!=` and
// `!~` do not match: they name no resource.
var equalityMatcher = regexp.MustCompile(`(?:"((?:[^"\\]|\\.)*)"|([A-Za-z_][A-Za-z0-9_]*))\s*(=~?)\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')`)

// literalName is a regex that matches one name only: PromQL anchors regex matchers, so
// `=~"chat"` (how Grafana writes a single-value variable) selects just what `="chat"` does.
var literalName = regexp.MustCompile(`^[A-Za-z0-9](?:-*[A-Za-z0-9])*$`)

// foreign reports whether the alarm watches another AWS service: a metric alarm in its
// namespace, or a PromQL alarm over its vended metrics (instrumentation scope
// cloudwatch.aws/<service>). Their dimensions and labels share names with SageMaker's (EC2's
// InstanceId, others' EndpointName) but name no SageMaker resource. Custom namespaces are the
// user's own and may well.
func foreign(a awsapi.Alarm) bool {
	ns := strings.ToLower(a.Namespace)
	if strings.HasPrefix(ns, "aws/") && ns != "aws/sagemaker" && !strings.HasPrefix(ns, "aws/sagemaker/") {
		return true
	}
	for scope := range matchers(a.PromQL)[semconv.LabelScopeName] {
		if strings.HasPrefix(scope, "cloudwatch.aws/") && scope != semconv.ScopeSageMakerVended {
			return true
		}
	}
	return false
}

// fromPromQL reads a target from the equality matchers of a PromQL alarm's query. A kind
// matched with two different values (`a or b`) names no single resource and is left unknown.
func fromPromQL(query string) target {
	values := matchers(query)
	one := func(names []string) string {
		found := ""
		for _, n := range names {
			for v := range values[n] {
				if found != "" && found != v {
					return ""
				}
				found = v
			}
		}
		return found
	}
	return target{endpoint: one(endpointNames), component: one(componentNames), instance: one(instanceNames), account: one(accountNames)}
}

// matchers are the values of the query's equality matchers, by label name.
func matchers(query string) map[string]map[string]bool {
	values := map[string]map[string]bool{}
	for _, m := range equalityMatcher.FindAllStringSubmatch(query, -1) {
		name := m[2]
		if name == "" {
			name = unquote(m[1])
		}
		value := unquote(cmp.Or(m[4], m[5]))
		if value == "" || (m[3] == "=~" && !literalName.MatchString(value)) {
			continue
		}
		if values[name] == nil {
			values[name] = map[string]bool{}
		}
		values[name][value] = true
	}
	return values
}

// unquote undoes PromQL string escapes; text that is not a valid escape stays as written.
func unquote(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	if u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`); err == nil {
		return u
	}
	return s
}

// hit is one resource an alarm applies to, in the state it has for that resource.
type hit struct {
	target
	state, reason string
}

// alarmTarget is the resource an alarm names by itself: a metric alarm's dimensions (unless
// it is another AWS service's), else the equality matchers of a PromQL alarm's query. Empty
// when it names none. A metric alarm reads its own account's metrics: its account is the
// one in its ARN. A PromQL alarm's is its query's @aws.account matcher, else unknown: in a
// monitoring account its query sees every linked account's series.
func alarmTarget(a awsapi.Alarm) target {
	if foreign(a) {
		return target{}
	}
	if a.PromQL == "" {
		t := fromLabels(a.Dimensions)
		t.account = cmp.Or(t.account, AccountOf(a.ARN))
		return t
	}
	if t := fromLabels(a.Dimensions); !t.empty() {
		return t
	}
	return fromPromQL(a.PromQL)
}

// NeedsContributors reports whether the alarm may be tied to finer resources through its
// contributors: a PromQL alarm in ALARM whose query names no IC or instance (a by-IC query,
// over every endpoint or scoped to one), so it may have one series per IC or instance.
func NeedsContributors(a awsapi.Alarm) bool {
	if a.PromQL == "" || a.State != awsapi.StateAlarm {
		return false
	}
	t := alarmTarget(a)
	return t.component == "" && t.instance == "" && !foreign(a)
}

// hits are the resources an alarm applies to: each contributor in ALARM (with what the alarm
// itself names filled in), else the resource the alarm names. An alarm that names nothing
// (another service's, or a multi-series alarm that is not in ALARM) applies to none.
func hits(a awsapi.Alarm, contributors []awsapi.Contributor) []hit {
	named := alarmTarget(a)
	var out []hit
	if NeedsContributors(a) {
		for _, c := range contributors {
			t := fromLabels(c.Attributes)
			if t.empty() {
				continue
			}
			out = append(out, hit{target: t.within(named), state: awsapi.StateAlarm, reason: cmp.Or(c.Reason, a.Reason)})
		}
	}
	if len(out) == 0 && !named.empty() {
		out = append(out, hit{target: named, state: a.State, reason: a.Reason})
	}
	return out
}
