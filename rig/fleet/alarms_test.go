package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAlarmErrorsNameLineProblemAndFix(t *testing.T) {
	tests := []struct {
		name     string
		alarms   string
		line     int
		contains []string
	}{
		{"bad for_each", "  - {name: 'a-{{ic}}', for_each: model, query: up}\n", 17, []string{`for_each "model"`, "inference_component, endpoint"}},
		{"ic placeholder without for_each", "  - name: a\n    query: 'up{x=\"{{ic}}\"}'\n", 18, []string{"{{ic}} is only filled in", "for_each: inference_component"}},
		{"endpoint placeholder without for_each", "  - name: a\n    query: 'up{x=\"{{endpoint}}\"}'\n", 18, []string{"{{endpoint}} is only filled in"}},
		{"name does not vary", "  - {name: same, for_each: endpoint, query: up}\n", 17, []string{`alarm "same" repeats for each endpoint`}},
		{"no query", "  - name: a\n", 17, []string{"alarm without a query"}},
		{"bad period", "  - name: a\n    query: up\n    period: 1500ms\n", 19, []string{"period 1.5s", "whole seconds"}},
		{"negative pending", "  - name: a\n    query: up\n    pending_period: -1m\n", 19, []string{"pending_period -1m0s"}},
		{"duplicate", "  - {name: a, query: up}\n  - {name: a, query: up}\n", 18, []string{`alarm "a" is also defined at alarms[0]`}},
		{"expanded duplicate", "  - {name: x-ic, query: up}\n  - {name: 'x-{{ic}}', for_each: inference_component, query: up}\n", 18, []string{`alarm "x-ic" is also defined`}},
		{"bad promql", "  - name: a\n    query: 'max by (x (up) > 1'\n", 18, []string{"query of a does not parse", "fix the PromQL"}},
		{"unquoted utf-8 name", "  - name: a\n    query: 'vllm:kv_cache_usage_perc{aws.sagemaker.endpoint.name=\"e\"} > 0.9'\n", 18, []string{"does not parse"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("fleet.yaml", []byte(validBase+"alarms:\n"+tt.alarms))
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("want Errors, got %v", err)
			}
			if es[0].Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", es[0].Line, tt.line, err)
			}
			for _, c := range tt.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q does not contain %q", err, c)
				}
			}
		})
	}
}

func TestAlarmsExpandPerICAndEndpoint(t *testing.T) {
	f, err := Parse("fleet.yaml", []byte(validBase+`  - name: solo
    model: m
    engine: sglang
    instances: [{type: ml.g5.2xlarge, az: us-east-1b, count: 1, gpus: 1, gpu_memory_mib: 23028}]
    traffic: {base_rps: 1}
alarms:
  - name: 'kv-{{ic}}'
    for_each: inference_component
    query: 'max({"vllm:kv_cache_usage_perc", "aws.sagemaker.inference_component.name"="{{ic}}", "aws.sagemaker.endpoint.name"="{{endpoint}}"}) > 0.9'
    pending_period: 2m
  - name: 'up-{{endpoint}}'
    for_each: endpoint
    query: 'up{e="{{endpoint}}"} == 0'
    period: 30s
  - {name: fleet-wide, query: 'vector(1) > 2'}
`))
	if err != nil {
		t.Fatal(err)
	}
	defs := f.AlarmDefs()
	var names []string
	for _, a := range defs {
		names = append(names, a.Name)
		if a.ForEach != "" || strings.Contains(a.Query, "{{") {
			t.Errorf("%s not expanded: %+v", a.Name, a)
		}
	}
	if got, want := strings.Join(names, ","), "kv-ic,up-ep,up-solo,fleet-wide"; got != want {
		t.Fatalf("alarms = %s, want %s", got, want)
	}
	if !strings.Contains(defs[0].Query, `"aws.sagemaker.inference_component.name"="ic", "aws.sagemaker.endpoint.name"="ep"`) {
		t.Errorf("kv-ic query = %s", defs[0].Query)
	}
	if defs[0].Period != time.Minute || defs[0].PendingPeriod != 2*time.Minute || defs[1].Period != 30*time.Second {
		t.Errorf("periods: %+v %+v", defs[0], defs[1])
	}
	f.Alarms = []Alarm{}
	if n := len(f.AlarmDefs()); n != 0 {
		t.Errorf("alarms: [] gave %d alarms, want none", n)
	}
}

func TestDefaultAlarmsCoverEveryDeploymentAndParse(t *testing.T) {
	f := Default()
	defs := f.AlarmDefs()
	byName := map[string]Alarm{}
	for _, a := range defs {
		if _, err := promqlParser.ParseExpr(a.Query); err != nil {
			t.Errorf("%s: %v\n%s", a.Name, err, a.Query)
		}
		byName[a.Name] = a
	}
	for _, e := range f.Endpoints {
		want := []string{"gpu-memory"}
		for _, ic := range e.InferenceComponents {
			want = append(want, "kv-cache-"+ic.Name, "ttft-p99-"+ic.Name, "5xx-"+ic.Name)
		}
		switch e.Engine {
		case EngineVLLM, EngineSGLang:
			want = append(want, "kv-cache-"+e.Name, "ttft-p99-"+e.Name, "5xx-"+e.Name)
		case EngineDJL: // no KV or TTFT metrics to alarm on
			want = append(want, "5xx-"+e.Name)
			if _, ok := byName["kv-cache-"+e.Name]; ok {
				t.Errorf("DJL endpoint %s got a KV cache alarm", e.Name)
			}
		}
		for _, n := range want {
			if _, ok := byName[n]; !ok {
				t.Errorf("default alarms lack %s", n)
			}
		}
	}
	if q := byName["kv-cache-chat-qwen-7b"].Query; !strings.Contains(q, "sglang:token_usage{") || !strings.HasSuffix(q, ">= 0.9") {
		t.Errorf("SGLang KV alarm query = %s", q)
	}
}
