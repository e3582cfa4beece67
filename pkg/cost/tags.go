package cost

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strings"

	px "github.com/inferscope/sagemaker-datasource/pkg/promqlexpr"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Untagged is the group of resources without the tag.
const Untagged = "untagged"

// Resource names an endpoint (IC "") or an inference component (Endpoint "": the IC's
// vended series name no endpoint) of an account.
type Resource struct{ Account, Endpoint, IC string }

// WithTags adds the queries of a tag key's values: the enriched vended series (the only
// ones CloudWatch documents as carrying "@aws.tag.<Key>") grouped per endpoint and per IC,
// one series per resource and value. endpoint and account are the names the query is
// narrowed to (nil: any).
func (e Exprs) WithTags(key string, endpoints, accounts []string) Exprs {
	label := sc.LabelTagPrefix + key
	var m []string
	if len(accounts) > 0 {
		m = append(m, px.Re(sc.LabelAccount, alternation(accounts)))
	}
	icM := m
	if len(endpoints) > 0 {
		m = append(m, px.Re(sc.DimEndpointName, alternation(endpoints)))
	}
	e.TagKey = key
	e.EndpointTags = px.Agg("group", []string{sc.LabelAccount, sc.DimEndpointName, label}, px.Sel(sc.Invocations, m...))
	e.ICTags = px.Agg("group", []string{sc.LabelAccount, sc.DimInferenceComponentName, label}, px.Sel(sc.InvocationsForIC, icM...))
	return e
}

// alternation matches any of the names literally.
func alternation(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(q, "|")
}

// readTags reads the tag queries' series into each resource's value; a resource retagged
// within the range keeps the value of its newest sample.
func readTags(key string, endpoints, ics []Series) map[Resource]string {
	label := sc.LabelTagPrefix + key
	out := map[Resource]string{}
	newest := map[Resource]int64{}
	add := func(r Resource, s Series) {
		last := int64(math.MinInt64)
		if len(s.T) > 0 {
			last = s.T[len(s.T)-1]
		}
		if _, seen := newest[r]; seen && newest[r] >= last {
			return
		}
		newest[r], out[r] = last, s.Labels(label)
	}
	for _, s := range endpoints {
		add(Resource{Account: s.Labels(sc.LabelAccount), Endpoint: s.Labels(sc.DimEndpointName)}, s)
	}
	for _, s := range ics {
		add(Resource{Account: s.Labels(sc.LabelAccount), IC: s.Labels(sc.DimInferenceComponentName)}, s)
	}
	return out
}

// TagOf is the tag's value on a holder: its IC's own tag (AWS does not copy the endpoint's
// tags to its components), else its endpoint's (free GPUs and single-model copies are the
// endpoint's), else Untagged.
func (in Input) TagOf(account, endpoint, ic string) string {
	if ic != "" {
		if v := in.Tags[Resource{Account: account, IC: ic}]; v != "" {
			return v
		}
	}
	if v := in.Tags[Resource{Account: account, Endpoint: endpoint}]; v != "" {
		return v
	}
	return Untagged
}

// TagSpend is what the resources with one value of a tag spend: a view's rows summed.
// A member's gap (a missing price) leaves the group's amounts missing, not partial.
type TagSpend struct {
	Region, Value                     string
	Gap                               error
	InstanceHours, GPUHours           float64
	Spend, IdleSpend, IdlePerDay      float64
	Output, Input                     float64 // tokens of the members whose engines count them
	PerMillionOutput, PerMillionInput float64 // USD: the spend of those members over their tokens
	tokenSpend                        float64
}

// byTag sums rows per tag value, costliest first (missing last), Untagged after the tagged.
func byTag[T any](in Input, rows []T, holder func(T) (account, endpoint, ic string), add func(*TagSpend, T) error) []TagSpend {
	var out []TagSpend
	index := map[string]int{}
	for _, r := range rows {
		v := in.TagOf(holder(r))
		i, ok := index[v]
		if !ok {
			i = len(out)
			index[v] = i
			out = append(out, TagSpend{Region: in.Region, Value: v})
		}
		if gap := add(&out[i], r); gap != nil && out[i].Gap == nil {
			out[i].Gap = gap
		}
	}
	for i := range out {
		out[i].PerMillionOutput = perMillion(out[i].tokenSpend, out[i].Output)
		out[i].PerMillionInput = perMillion(out[i].tokenSpend, out[i].Input)
	}
	slices.SortStableFunc(out, func(a, b TagSpend) int {
		return cmp.Or(cmp.Compare(boolInt(a.Value == Untagged), boolInt(b.Value == Untagged)), cmpSpend(b.Spend+b.IdleSpend, a.Spend+a.IdleSpend), strings.Compare(a.Value, b.Value))
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SpendByTag sums the lines per tag value: their spend, and the part no copy holds (idle).
func SpendByTag(in Input, lines []Line) []TagSpend {
	return byTag(in, lines, func(l Line) (string, string, string) { return l.Account, l.Endpoint, l.IC }, func(s *TagSpend, l Line) error {
		s.InstanceHours += l.InstanceHours
		s.GPUHours += l.GPUHours
		s.Spend += l.Spend
		if l.Free() {
			s.IdleSpend += l.Spend
		}
		return l.Gap
	})
}

// IdleByTag sums the idle spend (Idle) per tag value.
func IdleByTag(in Input, idle []IdleSpend) []TagSpend {
	return byTag(in, idle, func(i IdleSpend) (string, string, string) { return i.Account, i.Endpoint, i.IC }, func(s *TagSpend, i IdleSpend) error {
		s.GPUHours += i.GPUHours
		s.InstanceHours += i.InstanceHours
		s.IdleSpend += i.Spend
		s.IdlePerDay += i.PerDay
		return i.Gap
	})
}

// TokensByTag sums the per-model rows (PerModel) per tag value: spend, tokens, and USD per
// million tokens over the members whose tokens were counted (a DJL copy's spend has no
// tokens to divide).
func TokensByTag(in Input, rows []ModelCost) []TagSpend {
	return byTag(in, rows, func(m ModelCost) (string, string, string) { return m.Account, m.Endpoint, m.IC }, func(s *TagSpend, m ModelCost) error {
		s.InstanceHours += m.InstanceHours
		s.Spend += m.Spend
		if !math.IsNaN(m.Output) {
			s.Output += m.Output
			s.Input += m.Input
			s.tokenSpend += m.Spend
		}
		return m.Gap
	})
}
