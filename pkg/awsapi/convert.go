package awsapi

import (
	"encoding/json"
	"maps"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// The SDK's shapes become the seam's types here, without any I/O.

func alarmOf(a cwtypes.MetricAlarm) Alarm {
	out := Alarm{
		Name:        aws.ToString(a.AlarmName),
		ARN:         aws.ToString(a.AlarmArn),
		Description: aws.ToString(a.AlarmDescription),
		State:       string(a.StateValue),
		Reason:      aws.ToString(a.StateReason),
		Updated:     derefTime(a.StateTransitionedTimestamp),
		Namespace:   aws.ToString(a.Namespace),
		Metric:      aws.ToString(a.MetricName),
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
				out.Namespace, out.Metric, out.Dimensions = aws.ToString(m.Namespace), aws.ToString(m.MetricName), dimensions(m.Dimensions)
				break
			}
		}
	}
	out.Every = evaluationPeriod(a)
	if p, ok := a.EvaluationCriteria.(*cwtypes.EvaluationCriteriaMemberPromQLCriteria); ok {
		// A PromQL alarm folds its threshold into the query.
		out.PromQL = aws.ToString(p.Value.Query)
		out.Threshold, out.Comparison = nil, ""
	}
	return out
}

// evaluationPeriod is how often the alarm is evaluated: the evaluation interval when set
// (PromQL alarms), else the period, else a metric-math alarm's shortest query period.
func evaluationPeriod(a cwtypes.MetricAlarm) time.Duration {
	secs := aws.ToInt32(a.EvaluationInterval)
	if secs <= 0 {
		secs = aws.ToInt32(a.Period)
	}
	if secs <= 0 {
		for _, q := range a.Metrics {
			p := aws.ToInt32(q.Period)
			if p <= 0 && q.MetricStat != nil {
				p = aws.ToInt32(q.MetricStat.Period)
			}
			if p > 0 && (secs <= 0 || p < secs) {
				secs = p
			}
		}
	}
	return time.Duration(max(secs, 0)) * time.Second
}

func dimensions(ds []cwtypes.Dimension) map[string]string {
	if len(ds) == 0 {
		return nil
	}
	m := make(map[string]string, len(ds))
	for _, d := range ds {
		m[aws.ToString(d.Name)] = aws.ToString(d.Value)
	}
	return m
}

func contributorOf(c cwtypes.AlarmContributor) Contributor {
	return Contributor{
		ID:         aws.ToString(c.ContributorId),
		Attributes: maps.Clone(c.ContributorAttributes),
		Reason:     aws.ToString(c.StateReason),
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
		Alarm:       aws.ToString(h.AlarmName),
		Time:        derefTime(h.Timestamp),
		Summary:     aws.ToString(h.HistorySummary),
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
		Name:          aws.ToString(d.EndpointName),
		ARN:           aws.ToString(d.EndpointArn),
		Status:        string(d.EndpointStatus),
		ConfigName:    aws.ToString(d.EndpointConfigName),
		FailureReason: aws.ToString(d.FailureReason),
		Created:       derefTime(d.CreationTime),
		Modified:      derefTime(d.LastModifiedTime),
	}
	configured := map[string]smtypes.ProductionVariant{}
	var order []string
	if cfg != nil {
		for _, v := range cfg.ProductionVariants {
			configured[aws.ToString(v.VariantName)] = v
			order = append(order, aws.ToString(v.VariantName))
		}
	}
	for _, v := range d.ProductionVariants {
		name := aws.ToString(v.VariantName)
		e.Variants = append(e.Variants, Variant{
			Name:             name,
			InstanceType:     string(configured[name].InstanceType),
			CurrentInstances: int(aws.ToInt32(v.CurrentInstanceCount)),
			DesiredInstances: int(aws.ToInt32(v.DesiredInstanceCount)),
		})
	}
	if len(d.ProductionVariants) == 0 {
		for _, name := range order {
			v := configured[name]
			e.Variants = append(e.Variants, Variant{Name: name, InstanceType: string(v.InstanceType), DesiredInstances: int(aws.ToInt32(v.InitialInstanceCount))})
		}
	}
	return e
}

func componentOf(s smtypes.InferenceComponentSummary, d *sagemaker.DescribeInferenceComponentOutput) Component {
	c := Component{
		Name:     aws.ToString(s.InferenceComponentName),
		ARN:      aws.ToString(s.InferenceComponentArn),
		Endpoint: aws.ToString(s.EndpointName),
		Variant:  aws.ToString(s.VariantName),
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
	c.FailureReason = aws.ToString(d.FailureReason)
	if d.Specification != nil {
		c.Model = aws.ToString(d.Specification.ModelName)
	}
	if d.RuntimeConfig != nil {
		c.CurrentCopies = int(aws.ToInt32(d.RuntimeConfig.CurrentCopyCount))
		c.DesiredCopies = int(aws.ToInt32(d.RuntimeConfig.DesiredCopyCount))
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

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}
