package awsapi

import (
	"encoding/json"
	"maps"
	"regexp"
	"time"

	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// The SDK's shapes become the seam's types here, without any I/O.

func alarmOf(a cwtypes.MetricAlarm) Alarm {
	out := Alarm{
		Name:        deref(a.AlarmName),
		ARN:         deref(a.AlarmArn),
		Description: deref(a.AlarmDescription),
		State:       string(a.StateValue),
		Reason:      deref(a.StateReason),
		Updated:     derefTime(a.StateTransitionedTimestamp),
		Namespace:   deref(a.Namespace),
		Metric:      deref(a.MetricName),
		Dimensions:  dimensions(a.Dimensions),
		Comparison:  string(a.ComparisonOperator),
		Threshold:   a.Threshold,
	}
	if out.Updated.IsZero() {
		out.Updated = derefTime(a.StateUpdatedTimestamp)
	}
	if out.Metric == "" {
		// A metric-math alarm names its metrics in Metrics; the first one with a
		// MetricStat carries the dimensions that identify the resource.
		for _, q := range a.Metrics {
			if q.MetricStat != nil && q.MetricStat.Metric != nil {
				m := q.MetricStat.Metric
				out.Namespace, out.Metric, out.Dimensions = deref(m.Namespace), deref(m.MetricName), dimensions(m.Dimensions)
				break
			}
		}
	}
	if p, ok := a.EvaluationCriteria.(*cwtypes.EvaluationCriteriaMemberPromQLCriteria); ok {
		// A PromQL alarm folds its threshold into the query.
		out.PromQL = deref(p.Value.Query)
		out.Threshold, out.Comparison = nil, ""
	}
	return out
}

func dimensions(ds []cwtypes.Dimension) map[string]string {
	if len(ds) == 0 {
		return nil
	}
	m := make(map[string]string, len(ds))
	for _, d := range ds {
		m[deref(d.Name)] = deref(d.Value)
	}
	return m
}

func contributorOf(c cwtypes.AlarmContributor) Contributor {
	return Contributor{
		ID:         deref(c.ContributorId),
		Attributes: maps.Clone(c.ContributorAttributes),
		Reason:     deref(c.StateReason),
		Since:      derefTime(c.StateTransitionedTimestamp),
	}
}

// summaryStates reads "Alarm updated from OK to ALARM", the summary CloudWatch writes
// for a state update, when HistoryData does not say.
var summaryStates = regexp.MustCompile(`from (OK|ALARM|INSUFFICIENT_DATA) to (OK|ALARM|INSUFFICIENT_DATA)`)

// historyData is the part of a state update's HistoryData JSON that names the states.
type historyData struct {
	OldState struct {
		StateValue string `json:"stateValue"`
	} `json:"oldState"`
	NewState struct {
		StateValue string `json:"stateValue"`
	} `json:"newState"`
}

func transitionOf(h cwtypes.AlarmHistoryItem) Transition {
	t := Transition{
		Alarm:       deref(h.AlarmName),
		Time:        derefTime(h.Timestamp),
		Summary:     deref(h.HistorySummary),
		Contributor: maps.Clone(h.AlarmContributorAttributes),
	}
	var d historyData
	if h.HistoryData != nil && json.Unmarshal([]byte(*h.HistoryData), &d) == nil {
		t.From, t.To = d.OldState.StateValue, d.NewState.StateValue
	}
	if t.From == "" && t.To == "" {
		if m := summaryStates.FindStringSubmatch(t.Summary); m != nil {
			t.From, t.To = m[1], m[2]
		}
	}
	return t
}

// endpointOf joins an endpoint's description with its configuration: the description has
// the live counts, the configuration the instance types (and the only variants while an
// endpoint is being created).
func endpointOf(d *sagemaker.DescribeEndpointOutput, cfg *sagemaker.DescribeEndpointConfigOutput) Endpoint {
	e := Endpoint{
		Name:          deref(d.EndpointName),
		ARN:           deref(d.EndpointArn),
		Status:        string(d.EndpointStatus),
		ConfigName:    deref(d.EndpointConfigName),
		FailureReason: deref(d.FailureReason),
		Created:       derefTime(d.CreationTime),
		Modified:      derefTime(d.LastModifiedTime),
	}
	configured := map[string]smtypes.ProductionVariant{}
	var order []string
	if cfg != nil {
		for _, v := range cfg.ProductionVariants {
			configured[deref(v.VariantName)] = v
			order = append(order, deref(v.VariantName))
		}
	}
	for _, v := range d.ProductionVariants {
		name := deref(v.VariantName)
		e.Variants = append(e.Variants, Variant{
			Name:             name,
			InstanceType:     string(configured[name].InstanceType),
			CurrentInstances: int(deref(v.CurrentInstanceCount)),
			DesiredInstances: int(deref(v.DesiredInstanceCount)),
		})
	}
	if len(d.ProductionVariants) == 0 {
		for _, name := range order {
			v := configured[name]
			e.Variants = append(e.Variants, Variant{Name: name, InstanceType: string(v.InstanceType), DesiredInstances: int(deref(v.InitialInstanceCount))})
		}
	}
	return e
}

func componentOf(s smtypes.InferenceComponentSummary, d *sagemaker.DescribeInferenceComponentOutput) Component {
	c := Component{
		Name:     deref(s.InferenceComponentName),
		ARN:      deref(s.InferenceComponentArn),
		Endpoint: deref(s.EndpointName),
		Variant:  deref(s.VariantName),
		Status:   string(s.InferenceComponentStatus),
		Created:  derefTime(s.CreationTime),
		Modified: derefTime(s.LastModifiedTime),
	}
	if d == nil {
		return c
	}
	if d.InferenceComponentStatus != "" {
		c.Status = string(d.InferenceComponentStatus)
	}
	if t := derefTime(d.LastModifiedTime); !t.IsZero() {
		c.Modified = t
	}
	c.FailureReason = deref(d.FailureReason)
	if d.Specification != nil {
		c.Model = deref(d.Specification.ModelName)
	}
	if d.RuntimeConfig != nil {
		c.CurrentCopies = int(deref(d.RuntimeConfig.CurrentCopyCount))
		c.DesiredCopies = int(deref(d.RuntimeConfig.DesiredCopyCount))
	}
	return c
}

func mapAll[S, T any](in []S, f func(S) T) []T {
	out := make([]T, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}
