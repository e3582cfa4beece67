package health

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestAlarmTarget(t *testing.T) {
	tests := []struct {
		name  string
		alarm awsapi.Alarm
		want  target
	}{
		{"metric alarm on an endpoint", awsapi.Alarm{Dimensions: map[string]string{"EndpointName": "chat", "VariantName": "AllTraffic"}}, target{endpoint: "chat"}},
		{"metric alarm on an IC", awsapi.Alarm{Dimensions: map[string]string{"InferenceComponentName": "chat-llama"}}, target{component: "chat-llama"}},
		{"metric alarm on an instance", awsapi.Alarm{Dimensions: map[string]string{"EndpointName": "chat", "InstanceId": "i-0a"}}, target{endpoint: "chat", instance: "i-0a"}},
		{"another service's alarm", awsapi.Alarm{Dimensions: map[string]string{"QueueName": "q"}}, target{}},
		{"an EC2 instance's alarm is no SageMaker instance", awsapi.Alarm{Namespace: "AWS/EC2", Dimensions: map[string]string{"InstanceId": "i-0a"}}, target{}},
		{"another AWS service's EndpointName", awsapi.Alarm{Namespace: "AWS/ApiGateway", Dimensions: map[string]string{"EndpointName": "chat"}}, target{}},
		{"SageMaker instance metrics namespace", awsapi.Alarm{Namespace: "/aws/sagemaker/Endpoints", Dimensions: map[string]string{"EndpointName": "chat", "VariantName": "AllTraffic"}}, target{endpoint: "chat"}},
		{"SageMaker IC namespace", awsapi.Alarm{Namespace: "AWS/SageMaker/InferenceComponents", Dimensions: map[string]string{"InferenceComponentName": "chat-llama"}}, target{component: "chat-llama"}},
		{"a custom namespace with SageMaker dimensions", awsapi.Alarm{Namespace: "MyTeam/LLM", Dimensions: map[string]string{"EndpointName": "chat"}}, target{endpoint: "chat"}},
		{"PromQL over EC2's vended metrics", awsapi.Alarm{PromQL: `CPUUtilization{InstanceId="i-0a", "@instrumentation.@name"="cloudwatch.aws/ec2"} > 80`}, target{}},
		{"PromQL over SageMaker's vended metrics", awsapi.Alarm{PromQL: `Invocation5XXErrors{EndpointName="chat", "@instrumentation.@name"="cloudwatch.aws/sagemaker"} > 5`}, target{endpoint: "chat"}},
		{"PromQL, quoted OTel label", awsapi.Alarm{PromQL: `max({"vllm:kv_cache_usage_perc", "aws.sagemaker.inference_component.name"="chat-llama"}) > 0.9`}, target{component: "chat-llama"}},
		{"PromQL, dimension label and single quotes", awsapi.Alarm{PromQL: `sum(Invocation5XXErrors{EndpointName='chat'}) > 5`}, target{endpoint: "chat"}},
		{"PromQL, instance label", awsapi.Alarm{PromQL: `DCGM_FI_DEV_GPU_TEMP{"@resource.host.id" = "i-0b", "aws.sagemaker.endpoint.name"="chat"} > 85`}, target{endpoint: "chat", instance: "i-0b"}},
		{"PromQL, regex and negative matchers name nothing", awsapi.Alarm{PromQL: `x{"aws.sagemaker.endpoint.name"=~"chat.+", EndpointName!="embed", EndpointName!~"x"} > 1`}, target{}},
		{"PromQL, a regex matcher that is one literal name", awsapi.Alarm{PromQL: `x{"aws.sagemaker.endpoint.name"=~"chat", InferenceComponentName =~ 'chat-llama'} > 1`}, target{endpoint: "chat", component: "chat-llama"}},
		{"PromQL, regex alternatives name no single one", awsapi.Alarm{PromQL: `x{EndpointName=~"chat|embed"} > 1`}, target{}},
		{"PromQL, a regex pattern names none", awsapi.Alarm{PromQL: `x{EndpointName=~"chat-.*", InferenceComponentName=~"chat-llama-v[0-9]"} > 1`}, target{}},
		{"PromQL, two endpoints name no single one", awsapi.Alarm{PromQL: `x{EndpointName="a"} > 1 or x{EndpointName="b"} > 1`}, target{}},
		{"PromQL, the same endpoint twice", awsapi.Alarm{PromQL: `x{EndpointName="a"} / y{"aws.sagemaker.endpoint.name"="a"} > 1`}, target{endpoint: "a"}},
		{"PromQL, escaped value", awsapi.Alarm{PromQL: `x{EndpointName="a\u002db"} > 1`}, target{endpoint: "a-b"}},
		{"PromQL by IC names nothing", awsapi.Alarm{PromQL: `max by ("aws.sagemaker.inference_component.name") (vllm:kv_cache_usage_perc) > 0.9`}, target{}},
	}
	for _, tt := range tests {
		if got := alarmTarget(tt.alarm); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestNeedsContributors(t *testing.T) {
	byIC := `max by ("aws.sagemaker.inference_component.name") (vllm:kv_cache_usage_perc) > 0.9`
	for _, tt := range []struct {
		a    awsapi.Alarm
		want bool
	}{
		{awsapi.Alarm{PromQL: byIC, State: awsapi.StateAlarm}, true},
		{awsapi.Alarm{PromQL: byIC, State: awsapi.StateOK}, false},
		{awsapi.Alarm{PromQL: `x{EndpointName="a"} > 1`, State: awsapi.StateAlarm}, true},
		{awsapi.Alarm{PromQL: `x{"aws.sagemaker.inference_component.name"="a"} > 1`, State: awsapi.StateAlarm}, false},
		{awsapi.Alarm{PromQL: `max by (InstanceId) (CPUUtilization{"@instrumentation.@name"="cloudwatch.aws/ec2"}) > 80`, State: awsapi.StateAlarm}, false},
		{awsapi.Alarm{Metric: "CPUUtilization", State: awsapi.StateAlarm}, false},
	} {
		if got := NeedsContributors(tt.a); got != tt.want {
			t.Errorf("%+v: got %v", tt.a, got)
		}
	}
}

// TestEndpointScopedMultiSeriesAlarm: a by-IC alarm scoped to one endpoint (how users keep an
// alarm per endpoint) colours the IC in trouble, as the unscoped by-IC alarm does, not only
// the endpoint; without contributors it still colours the endpoint it names.
func TestEndpointScopedMultiSeriesAlarm(t *testing.T) {
	a := awsapi.Alarm{Name: "kv-chat", State: awsapi.StateAlarm, Reason: "1 series breaching", Updated: t0,
		PromQL: `max by ("aws.sagemaker.inference_component.name") (vllm:kv_cache_usage_perc{"aws.sagemaker.endpoint.name"="chat"}) >= 0.9`}
	if !NeedsContributors(a) {
		t.Fatal("an endpoint-scoped by-IC alarm in ALARM needs its contributors")
	}
	inv := awsapi.Inventory{Endpoints: []awsapi.Endpoint{{Name: "chat", Components: []awsapi.Component{{Name: "chat-llama", Endpoint: "chat"}, {Name: "chat-qwen", Endpoint: "chat"}}}}}
	cs := map[string][]awsapi.Contributor{"kv-chat": {{Attributes: map[string]string{semconv.LabelInferenceComp: "chat-qwen"}, Reason: "KV 0.95"}}}
	for _, tt := range []struct {
		name         string
		contributors map[string][]awsapi.Contributor
		want         map[string]string
	}{
		{"with contributors", cs, map[string]string{"chat": StateNoAlarm, "chat-llama": StateNoAlarm, "chat-qwen": awsapi.StateAlarm}},
		{"without", nil, map[string]string{"chat": awsapi.StateAlarm, "chat-llama": StateNoAlarm, "chat-qwen": StateNoAlarm}},
	} {
		states, _ := Join(Input{Inventory: inv, Alarms: []awsapi.Alarm{a}, Contributors: tt.contributors})
		got := map[string]string{}
		for _, s := range states {
			got[s.Name()] = s.State
			if s.Name() == "chat-qwen" && s.State == awsapi.StateAlarm && (s.Endpoint != "chat" || s.Reason != "KV 0.95") {
				t.Errorf("%s: chat-qwen %+v", tt.name, s)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestJoin(t *testing.T) {
	inv := awsapi.Inventory{Region: "us-east-1", Endpoints: []awsapi.Endpoint{
		{Name: "chat", Components: []awsapi.Component{{Name: "chat-llama", Endpoint: "chat"}, {Name: "chat-qwen", Endpoint: "chat"}}},
		{Name: "embed"},
	}}
	th := 0.9
	alarms := []awsapi.Alarm{
		{Name: "kv-chat-llama", State: awsapi.StateOK, Updated: t0, PromQL: `max({"vllm:kv_cache_usage_perc","aws.sagemaker.inference_component.name"="chat-llama"}) >= 0.9`},
		{Name: "kv-by-ic", State: awsapi.StateAlarm, Reason: "2 series breaching", Updated: t0.Add(time.Minute),
			PromQL: `max by ("aws.sagemaker.inference_component.name") (vllm:kv_cache_usage_perc) >= 0.9`},
		{Name: "5xx-chat", State: awsapi.StateInsufficientData, Updated: t0, Namespace: "AWS/SageMaker", Metric: "Invocation5XXErrors",
			Dimensions: map[string]string{"EndpointName": "chat", "VariantName": "AllTraffic"}, Threshold: &th},
		{Name: "gpu-temp-i-0a", State: awsapi.StateAlarm, Updated: t0, Dimensions: map[string]string{"EndpointName": "chat", "InferenceComponentName": "chat-qwen", "InstanceId": "i-0a"}},
		{Name: "sqs-depth", State: awsapi.StateAlarm, Dimensions: map[string]string{"QueueName": "jobs"}},
		{Name: "old-endpoint", State: awsapi.StateInsufficientData, Dimensions: map[string]string{"EndpointName": "gone"}},
	}
	contributors := map[string][]awsapi.Contributor{"kv-by-ic": {
		{Attributes: map[string]string{semconv.LabelInferenceComp: "chat-llama", semconv.LabelEndpoint: "chat"}, Reason: "KV 0.97 ≥ 0.9"},
	}}
	states, unmapped := Join(Input{Inventory: inv, Alarms: alarms, Contributors: contributors, Region: "us-east-1"})
	got := map[string]State{}
	var order []string
	for _, s := range states {
		got[s.Type+"/"+s.Name()] = s
		order = append(order, s.Type+"/"+s.Name())
	}
	wantOrder := []string{"inference_component/chat-llama", "instance/i-0a", "endpoint/chat", "endpoint/gone", "inference_component/chat-qwen", "endpoint/embed"}
	if strings.Join(order, " ") != strings.Join(wantOrder, " ") {
		t.Errorf("order %v\nwant  %v", order, wantOrder)
	}
	check := func(key, state, alarm string, count int) {
		t.Helper()
		s := got[key]
		if s.State != state || s.Alarm != alarm || s.Alarms != count {
			t.Errorf("%s: state %s alarm %q count %d, want %s %q %d", key, s.State, s.Alarm, s.Alarms, state, alarm, count)
		}
	}
	check("inference_component/chat-llama", "ALARM", "kv-by-ic", 2)
	check("instance/i-0a", "ALARM", "gpu-temp-i-0a", 1)
	check("endpoint/chat", "INSUFFICIENT_DATA", "5xx-chat", 1)
	check("inference_component/chat-qwen", StateNoAlarm, "", 0)
	check("endpoint/embed", StateNoAlarm, "", 0)
	if s := got["inference_component/chat-llama"]; s.Reason != "KV 0.97 ≥ 0.9" || s.Endpoint != "chat" || !strings.Contains(s.AlarmURL, "#alarmsV2:alarm/kv-by-ic") {
		t.Errorf("chat-llama: %+v", s)
	}
	if s := got["instance/i-0a"]; s.Endpoint != "chat" || s.Component != "chat-qwen" || s.ConsoleURL() != "https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1#/inference-components/chat-qwen" {
		t.Errorf("i-0a: %+v", s)
	}
	if s := got["endpoint/chat"]; s.Metric != "Invocation5XXErrors" || s.Threshold == nil || *s.Threshold != 0.9 || s.Updated == nil || !s.Updated.Equal(t0) {
		t.Errorf("chat: %+v", s)
	}
	if strings.Join(unmapped, ",") != "sqs-depth" {
		t.Errorf("unmapped %v", unmapped)
	}

	filtered, _ := Join(Input{Inventory: inv, Alarms: alarms, Contributors: contributors, Filter: Filter{Components: []string{"chat-qwen"}}})
	var names []string
	for _, s := range filtered {
		names = append(names, s.Name())
	}
	if strings.Join(names, ",") != "i-0a,chat-qwen" {
		t.Errorf("filtered by IC chat-qwen: %v", names)
	}
}

// TestJoinProperties: over random inventories and alarm sets, every resource appears exactly
// once, its severity is the maximum of its alarms' and its count theirs, resources without an
// alarm are NO_ALARM, and the rows are worst first.
func TestJoinProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 11))
	states := []string{awsapi.StateOK, awsapi.StateAlarm, awsapi.StateInsufficientData}
	for round := range 300 {
		var inv awsapi.Inventory
		var eps, ics []string
		for e := range rng.IntN(5) {
			ep := awsapi.Endpoint{Name: fmt.Sprintf("ep%d", e)}
			eps = append(eps, ep.Name)
			for c := range rng.IntN(4) {
				name := fmt.Sprintf("ep%d-ic%d", e, c)
				ics = append(ics, name)
				ep.Components = append(ep.Components, awsapi.Component{Name: name, Endpoint: ep.Name})
			}
			inv.Endpoints = append(inv.Endpoints, ep)
		}
		// Alarms name known and unknown endpoints and ICs, through dimensions or PromQL.
		type key struct{ typ, name string }
		want := map[key][]float64{}
		var alarms []awsapi.Alarm
		for a := range rng.IntN(12) {
			al := awsapi.Alarm{Name: fmt.Sprintf("a%d", a), State: states[rng.IntN(3)], Updated: t0.Add(time.Duration(rng.IntN(100)) * time.Minute)}
			var k key
			switch pick := rng.IntN(4); {
			case pick == 0 && len(eps) > 0:
				k = key{TypeEndpoint, eps[rng.IntN(len(eps))]}
				al.Dimensions = map[string]string{"EndpointName": k.name}
			case pick == 1 && len(ics) > 0:
				k = key{TypeComponent, ics[rng.IntN(len(ics))]}
				al.PromQL = fmt.Sprintf(`max({"vllm:kv_cache_usage_perc","%s"="%s"}) > 0.9`, semconv.LabelInferenceComp, k.name)
			case pick == 2:
				k = key{TypeInstance, fmt.Sprintf("i-%d", rng.IntN(3))}
				al.Dimensions = map[string]string{"InstanceId": k.name}
			default:
				k = key{TypeEndpoint, fmt.Sprintf("stray%d", rng.IntN(2))}
				al.PromQL = fmt.Sprintf(`x{EndpointName="%s"} > 1`, k.name)
			}
			want[k] = append(want[k], Severity(al.State))
			alarms = append(alarms, al)
		}
		for _, e := range eps {
			want[key{TypeEndpoint, e}] = append(want[key{TypeEndpoint, e}], []float64{}...)
		}
		for _, c := range ics {
			want[key{TypeComponent, c}] = append(want[key{TypeComponent, c}], []float64{}...)
		}
		got, unmapped := Join(Input{Inventory: inv, Alarms: alarms})
		// A filter keeps exactly the rows that pass it, in the same order.
		var f Filter
		if len(eps) > 0 && rng.IntN(2) == 0 {
			f.Endpoints = []string{eps[rng.IntN(len(eps))], "stray0"}
		}
		if len(ics) > 0 && rng.IntN(3) == 0 {
			f.Components = []string{ics[rng.IntN(len(ics))]}
		}
		filtered, _ := Join(Input{Inventory: inv, Alarms: alarms, Filter: f})
		var kept []string
		for _, s := range got {
			if f.Keep(s.Endpoint, s.Component) {
				kept = append(kept, s.Type+"/"+s.Name())
			}
		}
		var have []string
		for _, s := range filtered {
			have = append(have, s.Type+"/"+s.Name())
		}
		if !slices.Equal(have, kept) {
			t.Errorf("round %d: filter %+v kept %v, want %v", round, f, have, kept)
		}
		if len(unmapped) > 0 {
			t.Fatalf("round %d: unmapped %v", round, unmapped)
		}
		seen := map[key]bool{}
		for i, s := range got {
			k := key{s.Type, s.Name()}
			if seen[k] {
				t.Fatalf("round %d: %v appears twice", round, k)
			}
			seen[k] = true
			sevs, ok := want[k]
			if !ok {
				t.Fatalf("round %d: %v is no resource of the inventory or the alarms", round, k)
			}
			maxSev := 0.0
			for _, v := range sevs {
				maxSev = max(maxSev, v)
			}
			if Severity(s.State) != maxSev || s.Alarms != len(sevs) {
				t.Errorf("round %d: %v severity %v count %d, want %v %d", round, k, Severity(s.State), s.Alarms, maxSev, len(sevs))
			}
			if len(sevs) == 0 && (s.State != StateNoAlarm || s.Source != SourceNone || s.Alarm != "") {
				t.Errorf("round %d: %v has no alarm but reads %+v", round, k, s)
			}
			if i > 0 && Severity(got[i-1].State) < Severity(s.State) {
				t.Errorf("round %d: row %d (%s) after a better one", round, i, s.State)
			}
		}
		if len(seen) != len(want) {
			t.Errorf("round %d: %d rows for %d resources", round, len(seen), len(want))
		}
	}
}

func TestApplyThresholds(t *testing.T) {
	cfg := diagnosis.DefaultConfig()
	rules := ThresholdRules(cfg, Filter{Endpoints: []string{"chat"}}, false)
	if len(rules) != 2 || !strings.Contains(rules[0].Query, `"aws.sagemaker.endpoint.name"=~"chat"`) || !strings.Contains(rules[1].Query, "DCGM_FI_DEV_FB_USED") ||
		strings.Contains(rules[0].Query+rules[1].Query, "@aws.account") {
		t.Fatalf("rules %+v", rules)
	}
	for _, r := range ThresholdRules(cfg, Filter{}, true) {
		if !strings.Contains(r.Query, `"aws.sagemaker.inference_component.name", "@aws.account")`) {
			t.Errorf("by account, the query keeps the account: %s", r.Query)
		}
	}
	if rules[0].Label != "threshold: KV cache ≥ 90 %" || rules[1].Label != "threshold: GPU memory ≥ 95 %" {
		t.Errorf("labels %q, %q", rules[0].Label, rules[1].Label)
	}
	states := []State{
		{Resource: Resource{Type: TypeEndpoint, Endpoint: "chat"}, State: StateNoAlarm, Source: SourceNone},
		{Resource: Resource{Type: TypeEndpoint, Endpoint: "solo"}, State: StateNoAlarm, Source: SourceNone},
		{Resource: Resource{Type: TypeComponent, Endpoint: "chat", Component: "chat-llama"}, State: StateNoAlarm, Source: SourceNone},
		{Resource: Resource{Type: TypeComponent, Endpoint: "chat", Component: "chat-qwen"}, State: StateNoAlarm, Source: SourceNone},
		{Resource: Resource{Type: TypeComponent, Endpoint: "chat", Component: "chat-idle"}, State: StateNoAlarm, Source: SourceNone},
		{Resource: Resource{Type: TypeComponent, Endpoint: "chat", Component: "chat-nan"}, State: StateNoAlarm, Source: SourceNone},
		{Resource: Resource{Type: TypeComponent, Endpoint: "chat", Component: "chat-alarmed"}, State: "OK", Source: SourceAlarm, Alarm: "real", Alarms: 1},
	}
	readings := [][]Reading{
		{{Endpoint: "chat", Component: "chat-llama", Value: 0.97}, {Endpoint: "chat", Component: "chat-qwen", Value: 0.42},
			{Endpoint: "chat", Component: "chat-alarmed", Value: 0.99}, {Endpoint: "chat", Component: "chat-idle", Value: 0.5}, {Endpoint: "solo", Value: 0.5}},
		{{Endpoint: "chat", Component: "chat-llama", Value: 60}, {Endpoint: "chat", Component: "chat-qwen", Value: 70},
			{Endpoint: "chat", Component: "chat-nan", Value: math.NaN()}}, // a NaN reading is no reading
	}
	ApplyThresholds(states, rules, readings, t0)
	by := map[string]State{}
	for _, s := range states {
		by[s.Name()] = s
	}
	if s := by["chat-llama"]; s.State != "ALARM" || s.Source != SourceThreshold || s.Alarm != rules[0].Label || s.Reason != "KV cache usage 97 % ≥ 90 % (no CloudWatch alarm on this resource)" || *s.Threshold != 0.9 || s.Alarms != 0 {
		t.Errorf("chat-llama %+v", s)
	}
	if s := by["chat-qwen"]; s.State != "OK" || s.Alarm != rules[1].Label || s.Metric != rules[1].Query {
		t.Errorf("chat-qwen: the rule closest to its threshold (GPU 70 of 95 beats KV 0.42 of 0.9) should show: %+v", s)
	}
	if s := by["chat"]; s.State != StateNoAlarm {
		t.Errorf("endpoint chat has only its ICs' readings, which colour the ICs: %+v", s)
	}
	if s := by["solo"]; s.State != "OK" || s.Alarm != rules[0].Label || s.Reason != "KV cache usage 50 % < 90 % (no CloudWatch alarm on this resource)" {
		t.Errorf("endpoint solo (no ICs) reads its own series: %+v", s)
	}
	if s := by["chat-alarmed"]; s.Source != SourceAlarm || s.State != "OK" {
		t.Errorf("a resource with an alarm keeps it: %+v", s)
	}
	if s := by["chat-idle"]; s.State != "OK" || s.Alarm != rules[0].Label {
		t.Errorf("chat-idle %+v", s)
	}
	if s := by["chat-nan"]; s.State != StateNoAlarm || s.Source != SourceNone {
		t.Errorf("chat-nan has no usable reading: %+v", s)
	}
	if states[0].State != "ALARM" || states[len(states)-1].State != StateNoAlarm {
		t.Errorf("not sorted again: %v … %v", states[0].State, states[len(states)-1].State)
	}
}

// TestFramesMatchContract: the field names, order and types the dashboards rely on
// (contracts/11.md, docs/alarms.md), for empty input too.
func TestFramesMatchContract(t *testing.T) {
	invs := []awsapi.Inventory{{Region: "us-east-1", Endpoints: []awsapi.Endpoint{{Name: "chat", Components: []awsapi.Component{{Name: "ic"}}}}}}
	// A tagged resource adds the tags column.
	tagged := []awsapi.Inventory{{Region: "us-east-1", Endpoints: []awsapi.Endpoint{{Name: "chat", Tags: map[string]string{"Team": "a"}}}}}
	const (
		alarms = "resource:string resource_type:string endpoint:string inference_component:string instance:string state:string " +
			"severity:float64 source:string alarm:string alarms:int64 reason:string metric:string threshold:*float64 updated:*time.Time " +
			"alarm_url:string console_url:string region:string"
		history = "time:time.Time title:string text:string tags:string alarm:string from:string to:string " +
			"endpoint:string inference_component:string alarm_url:string"
		inventory = "kind:string endpoint:string variant:string inference_component:string status:string " +
			"instance_type:string instances:int64 desired_instances:int64 copies:int64 desired_copies:int64 model:string created:time.Time " +
			"modified:time.Time failure_reason:string console_url:string region:string"
		events = "time:time.Time title:string text:string tags:string"
		// A query naming its regions adds these at the end.
		account, regionAccount = " account:string", " region:string account:string"
	)
	for _, tt := range []struct {
		frame *data.Frame
		name  string
		want  string
	}{
		{AlarmsFrame(nil, false), "alarms", alarms},
		{AlarmsFrame(nil, true), "alarms", alarms + account},
		{HistoryFrame(nil, false), "alarm_history", history},
		{HistoryFrame(nil, true), "alarm_history", history + regionAccount},
		{InventoryFrame(invs, Filter{}, false), "inventory", inventory},
		{InventoryFrame(invs, Filter{}, true), "inventory", inventory + account},
		{InventoryFrame(tagged, Filter{}, true), "inventory", inventory + account + " tags:string"},
		{InventoryEventsFrame(invs, Filter{}, t0, t0, false), "inventory_events", events},
		{InventoryEventsFrame(invs, Filter{}, t0, t0, true), "inventory_events", events + regionAccount},
	} {
		var got []string
		for _, f := range tt.frame.Fields {
			got = append(got, f.Name+":"+f.Type().ItemTypeString())
		}
		if tt.frame.Name != tt.name || strings.Join(got, " ") != tt.want {
			t.Errorf("frame %q:\n got %s\nwant %s", tt.frame.Name, strings.Join(got, " "), tt.want)
		}
	}
}

func TestHistoryFrameTiesTransitionsToResources(t *testing.T) {
	inv := awsapi.Inventory{Endpoints: []awsapi.Endpoint{{Name: "chat", Components: []awsapi.Component{{Name: "chat-llama"}}}}}
	alarms := []awsapi.Alarm{
		{Name: "kv", PromQL: `x{"aws.sagemaker.inference_component.name"="chat-llama"} > 0.9`},
		{Name: "sqs", Dimensions: map[string]string{"QueueName": "q"}},
		{Name: "fleet-gpu", PromQL: `max by ("@resource.host.id") (y) > 95`},
		{Name: "chat-gpu", PromQL: `max by ("@resource.host.id") (y{EndpointName="chat"}) > 95`},
		{Name: "ec2-cpu", PromQL: `max by (InstanceId) (CPUUtilization{"@instrumentation.@name"="cloudwatch.aws/ec2"}) > 80`},
	}
	ts := []awsapi.Transition{
		{Alarm: "kv", Time: t0.Add(2 * time.Minute), From: "OK", To: "ALARM"},
		{Alarm: "sqs", Time: t0, From: "OK", To: "ALARM"},
		{Alarm: "fleet-gpu", Time: t0.Add(time.Minute), To: "ALARM", Contributor: map[string]string{"@resource.host.id": "i-9", "aws.sagemaker.endpoint.name": "chat"}},
		{Alarm: "fleet-gpu", Time: t0.Add(3 * time.Minute), From: "ALARM", To: "OK"},
		{Alarm: "deleted", Time: t0.Add(4 * time.Minute), From: "OK", To: "INSUFFICIENT_DATA"},
		{Alarm: "chat-gpu", Time: t0.Add(5 * time.Minute), To: "ALARM", Contributor: map[string]string{"@resource.host.id": "i-7"}},
		{Alarm: "ec2-cpu", Time: t0.Add(6 * time.Minute), To: "ALARM", Contributor: map[string]string{"InstanceId": "i-5"}},
	}
	for _, tt := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "fleet-gpu: ALARM (i-9)|kv: OK → ALARM|fleet-gpu: ALARM → OK|deleted: OK → INSUFFICIENT_DATA|chat-gpu: ALARM (i-7)"},
		{Filter{Endpoints: []string{"chat"}}, "fleet-gpu: ALARM (i-9)|kv: OK → ALARM|chat-gpu: ALARM (i-7)"},
		{Filter{Components: []string{"chat-llama"}}, "kv: OK → ALARM"},
	} {
		fr := HistoryFrame(HistoryRows(HistoryInput{Transitions: ts, Alarms: alarms, Inventory: inv, Filter: tt.f, Region: "eu-west-1"}), false)
		fld, _ := fr.FieldByName("title")
		var got []string
		for i := range fld.Len() {
			got = append(got, fld.At(i).(string))
		}
		if strings.Join(got, "|") != tt.want {
			t.Errorf("filter %+v: %q\nwant %q", tt.f, strings.Join(got, "|"), tt.want)
		}
	}
}

// FuzzFromPromQL: any alarm query maps to at most one resource per kind without panicking,
// and a single equality matcher written by promqlexpr is always found.
func FuzzFromPromQL(f *testing.F) {
	for _, s := range []string{`x{EndpointName="a"}`, `{"a\"b"='c\'d'}`, `x{"@resource.host.id"=~"i-.*"}`, `"\`, `{=""}`} {
		f.Add(s, "chat-1")
	}
	f.Fuzz(func(t *testing.T, query, name string) {
		_ = fromPromQL(query)
		if names, err := models.ParseNames(name); err != nil || len(names) != 1 || names[0] != name || strings.HasPrefix(name, "$") {
			return // not one SageMaker name
		}
		q := fmt.Sprintf(`max({"vllm:kv_cache_usage_perc", %q=%q}) > 0.9`, semconv.LabelInferenceComp, name)
		if got := fromPromQL(q); got.component != name {
			t.Fatalf("%s: got %+v", q, got)
		}
	})
}

// TestInventoryTags: the tags column holds each row's own resource's tags, keys in order:
// the endpoint's on its variant row, the IC's own (not the endpoint's) on the IC's.
func TestInventoryTags(t *testing.T) {
	invs := []awsapi.Inventory{{Region: "us-east-1", Endpoints: []awsapi.Endpoint{{
		Name: "chat", Variants: []awsapi.Variant{{Name: "v"}}, Tags: map[string]string{"Team": `search "ü".x`, "Cost Center": "4 2"},
		Components: []awsapi.Component{{Name: "ic-a", Variant: "v", Tags: map[string]string{"Team": "ads"}}, {Name: "ic-b", Variant: "v"}},
	}}}}
	fr := InventoryFrame(invs, Filter{}, false)
	f, _ := fr.FieldByName("tags")
	if f == nil {
		t.Fatal("no tags column")
	}
	want := []string{`Cost Center=4 2; Team=search "ü".x`, "Team=ads", ""}
	for i, w := range want {
		if got := f.At(i).(string); got != w {
			t.Errorf("row %d: tags %q, want %q", i, got, w)
		}
	}
}
