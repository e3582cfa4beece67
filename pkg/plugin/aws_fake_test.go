package plugin

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// fakeAWS is an awsapi.API answering from fields and recording the calls; panicIn names a
// call that panics.
type fakeAWS struct {
	alarms                                               []awsapi.Alarm
	contributors                                         map[string][]awsapi.Contributor
	history                                              []awsapi.Transition
	inventory                                            awsapi.Inventory
	scaling                                              []awsapi.ScalableTarget
	scalingErr                                           error
	alarmsErr, contributorsErr, historyErr, inventoryErr error
	panicIn                                              string

	mu    sync.Mutex
	calls []string
	query []awsapi.HistoryQuery
}

func (f *fakeAWS) record(op string) {
	f.mu.Lock()
	f.calls = append(f.calls, op)
	f.mu.Unlock()
	if f.panicIn == op {
		panic("fake " + op + " exploded")
	}
}

func (f *fakeAWS) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeAWS) Alarms(context.Context, awsapi.AlarmQuery) ([]awsapi.Alarm, error) {
	f.record("Alarms")
	return f.alarms, f.alarmsErr
}

func (f *fakeAWS) Contributors(_ context.Context, name string) ([]awsapi.Contributor, error) {
	f.record("Contributors")
	return f.contributors[name], f.contributorsErr
}

func (f *fakeAWS) History(_ context.Context, q awsapi.HistoryQuery) ([]awsapi.Transition, error) {
	f.record("History")
	f.mu.Lock()
	f.query = append(f.query, q)
	f.mu.Unlock()
	return f.history, f.historyErr
}

func (f *fakeAWS) Inventory(context.Context) (awsapi.Inventory, error) {
	f.record("Inventory")
	return f.inventory, f.inventoryErr
}

func (f *fakeAWS) ProbeAlarms(context.Context) error {
	f.record("ProbeAlarms")
	return f.alarmsErr
}

func (f *fakeAWS) ProbeInventory(context.Context) error {
	f.record("ProbeInventory")
	return f.inventoryErr
}

func (f *fakeAWS) ScalingTargets(context.Context) ([]awsapi.ScalableTarget, error) {
	f.record("ScalingTargets")
	return f.scaling, f.scalingErr
}

func (f *fakeAWS) ProbeScaling(context.Context) error {
	f.record("ProbeScaling")
	return f.scalingErr
}

// newAWSDatasource builds a datasource over a fake PromQL upstream and a fake AWS API.
func newAWSDatasource(t *testing.T, up *fakeUpstream, aws *fakeAWS) *Datasource {
	t.Helper()
	d, err := New(context.Background(), testSettings(""),
		func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
			return up, nil
		},
		WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (awsapi.API, error) {
			return aws, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if d.setupErr != nil {
		t.Fatalf("test settings rejected: %v", d.setupErr)
	}
	if d.home.awsErr != nil {
		t.Fatalf("the alarms and inventory client was not built: %v", d.home.awsErr)
	}
	return d
}

// fleet is a small region: endpoint chat with two ICs, embed without ICs, and new-ep being
// created; times within and before the query tests' range (from, to).
func fleet() awsapi.Inventory {
	at := func(min int) time.Time { return from.Add(time.Duration(min) * time.Minute) }
	return awsapi.Inventory{Region: "us-east-1", Endpoints: []awsapi.Endpoint{
		{Name: "embed", Status: "InService", ConfigName: "embed-cfg", Created: at(-3000), Modified: at(-3000),
			Variants: []awsapi.Variant{{Name: "AllTraffic", InstanceType: "ml.g5.xlarge", CurrentInstances: 1, DesiredInstances: 1}}},
		{Name: "chat", Status: "InService", ConfigName: "chat-cfg", Created: at(-2000), Modified: at(20),
			Variants: []awsapi.Variant{{Name: "AllTraffic", InstanceType: "ml.g5.12xlarge", CurrentInstances: 2, DesiredInstances: 3}},
			Components: []awsapi.Component{
				{Name: "chat-qwen", Endpoint: "chat", Variant: "AllTraffic", Status: "InService", Model: "qwen-7b", CurrentCopies: 1, DesiredCopies: 1, Created: at(-1000), Modified: at(-1000)},
				{Name: "chat-llama", Endpoint: "chat", Variant: "AllTraffic", Status: "Updating", Model: "llama-8b", CurrentCopies: 2, DesiredCopies: 4, Created: at(-1500), Modified: at(30)},
			}},
		{Name: "new-ep", Status: "Creating", Created: at(50), Modified: at(50), FailureReason: ""},
	}}
}

func fleetAlarms() []awsapi.Alarm {
	th := 5.0
	return []awsapi.Alarm{
		{Name: "kv-cache-chat-llama", State: awsapi.StateAlarm, Reason: "Threshold crossed: 1 datapoint ≥ 0.9", Updated: from.Add(40 * time.Minute),
			PromQL: `max({"vllm:kv_cache_usage_perc", "aws.sagemaker.inference_component.name"="chat-llama"}) >= 0.9`},
		{Name: "ttft-p99-by-ic", State: awsapi.StateAlarm, Reason: "1 contributor breaching", Updated: from.Add(45 * time.Minute),
			PromQL: `histogram_quantile(0.99, sum by ("aws.sagemaker.inference_component.name") (rate({"vllm:time_to_first_token_seconds"}[5m]))) > 2`},
		{Name: "5xx-chat", State: awsapi.StateOK, Reason: "Threshold not crossed", Updated: from.Add(-time.Hour), Namespace: "AWS/SageMaker", Metric: "Invocation5XXErrors",
			Dimensions: map[string]string{"EndpointName": "chat", "VariantName": "AllTraffic"}, Comparison: "GreaterThanThreshold", Threshold: &th},
		{Name: "gpu-mem i-0a", State: awsapi.StateInsufficientData, Reason: "no data", Updated: from.Add(10 * time.Minute),
			Dimensions: map[string]string{"EndpointName": "chat", "InstanceId": "i-0a"}},
		{Name: "billing", State: awsapi.StateAlarm, Dimensions: map[string]string{"Currency": "USD"}},
	}
}

func fleetContributors() map[string][]awsapi.Contributor {
	return map[string][]awsapi.Contributor{"ttft-p99-by-ic": {{ID: "c1", Reason: "P99 TTFT 3.1 s > 2 s", Since: from.Add(45 * time.Minute),
		Attributes: map[string]string{semconv.LabelInferenceComp: "chat-qwen"}}}}
}

func fleetHistory() []awsapi.Transition {
	return []awsapi.Transition{
		{Alarm: "kv-cache-chat-llama", Time: from.Add(40 * time.Minute), From: "OK", To: "ALARM", Summary: "Alarm updated from OK to ALARM"},
		{Alarm: "5xx-chat", Time: from.Add(5 * time.Minute), From: "ALARM", To: "OK", Summary: "Alarm updated from ALARM to OK"},
		{Alarm: "ttft-p99-by-ic", Time: from.Add(45 * time.Minute), To: "ALARM", Summary: "Contributor chat-qwen breaching",
			Contributor: map[string]string{semconv.LabelInferenceComp: "chat-qwen"}},
		{Alarm: "billing", Time: from.Add(50 * time.Minute), From: "OK", To: "ALARM", Summary: "spend"},
	}
}

// denied is AWS refusing an IAM action, as awsapi reports it.
func denied(action string) error {
	return &awsapi.PermissionError{Action: action, Err: errors.New("AccessDeniedException")}
}

func fullFake() *fakeAWS {
	return &fakeAWS{alarms: fleetAlarms(), contributors: fleetContributors(), history: fleetHistory(), inventory: fleet()}
}
