package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

// start runs a 3-hour stack for a scenario; the incidents live in its last 90 minutes.
func start(t *testing.T, scenario string) *Stack {
	t.Helper()
	st, err := Start(context.Background(), Options{Scenario: scenario, Seed: 7, History: 3 * time.Hour, End: PinnedEnd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// instant runs a signed instant query at the end of the history and returns value by the
// given label's value.
func instant(t *testing.T, st *Stack, expr, by string) map[string]float64 {
	t.Helper()
	c := &http.Client{Transport: awsauth.NewSigner(http.DefaultTransport,
		credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), st.Region, awsauth.SigningService, nil)}
	form := url.Values{"query": {expr}, "time": {strconv.FormatInt(st.End.Unix(), 10)}}
	resp, err := c.PostForm(st.URL+"/api/v1/query", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: HTTP %d: %s", expr, resp.StatusCode, body)
	}
	m := map[string]float64{}
	for _, r := range decodeVector(t, body) {
		m[r.Metric[by]] = r.value(t)
	}
	return m
}

// sample is one series of an instant query's vector.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value(t *testing.T) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
	if err != nil {
		t.Fatalf("value %v: %v", s.Value, err)
	}
	return v
}

// decodeVector reads an instant query's answer.
func decodeVector(t *testing.T, body []byte) []sample {
	t.Helper()
	var out struct {
		Data struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return out.Data.Result
}

// check is one PromQL probe of an incident: the scenario must satisfy incident, healthy must
// satisfy normal. Each predicate gets the result by label value.
type check struct {
	expr     string
	by       string
	incident func(map[string]float64) bool
	normal   func(map[string]float64) bool
}

func above(key string, x float64) func(map[string]float64) bool {
	return func(m map[string]float64) bool { v, ok := m[key]; return ok && v > x }
}

func below(key string, x float64) func(map[string]float64) bool {
	return func(m map[string]float64) bool { v, ok := m[key]; return ok && v < x }
}

func empty(m map[string]float64) bool { return len(m) == 0 }

const (
	ic   = `"aws.sagemaker.inference_component.name"`
	host = `"@resource.host.id"`
)

var scenarioChecks = map[string][]check{
	"kv-saturation": {
		{`max by (` + ic + `) ({"vllm:kv_cache_usage_perc", ` + ic + `="chat-llama-8b"})`, "aws.sagemaker.inference_component.name",
			above("chat-llama-8b", 0.9), below("chat-llama-8b", 0.6)},
		{`sum by (` + ic + `) ({"vllm:num_requests_waiting", ` + ic + `="chat-llama-8b"})`, "aws.sagemaker.inference_component.name",
			above("chat-llama-8b", 20), below("chat-llama-8b", 5)},
		{`histogram_quantile(0.5, sum by (` + ic + `) (rate({"vllm:time_to_first_token_seconds", ` + ic + `="chat-llama-8b"}[10m])))`, "aws.sagemaker.inference_component.name",
			above("chat-llama-8b", 2), below("chat-llama-8b", 0.5)},
		// Model latency stays in the healthy range (the reading rule's "model latency normal").
		{`histogram_avg(sum by (InferenceComponentName) (sum_over_time(ModelLatencyForIc{InferenceComponentName="chat-llama-8b"}[15m]))) / 1e6`, "InferenceComponentName",
			below("chat-llama-8b", 6), below("chat-llama-8b", 6)},
	},
	// The deployed IC decodes 2.5× slower than its sibling of the same model; healthy, the two
	// are alike.
	"bad-deploy": {
		{`histogram_avg(sum(rate({"vllm:inter_token_latency_seconds", ` + ic + `="chat-llama-8b"}[30m]))) / histogram_avg(sum(rate({"vllm:inter_token_latency_seconds", ` + ic + `="code-llama-8b"}[30m])))`, "",
			above("", 2), below("", 1.3)},
	},
	"bad-config": {
		{`sum(sum_over_time(Invocation5XXErrors{EndpointName="summarize"}[30m])) / sum(sum_over_time(Invocations{EndpointName="summarize"}[30m]))`, "",
			above("", 0.2), below("", 0.01)},
	},
	// The unrelated incident plays as engine-queueing does.
	"benign-deploy": {
		{`histogram_quantile(0.5, sum by (` + ic + `) (rate({"sglang:time_to_first_token_seconds", ` + ic + `="chat-qwen-7b"}[10m])))`, "aws.sagemaker.inference_component.name",
			above("chat-qwen-7b", 2), below("chat-qwen-7b", 0.5)},
	},
	"engine-queueing": {
		{`histogram_quantile(0.5, sum by (` + ic + `) (rate({"sglang:time_to_first_token_seconds", ` + ic + `="chat-qwen-7b"}[10m])))`, "aws.sagemaker.inference_component.name",
			above("chat-qwen-7b", 2), below("chat-qwen-7b", 0.5)},
		{`sum by (` + ic + `) ({"sglang:num_queue_reqs", ` + ic + `="chat-qwen-7b"})`, "aws.sagemaker.inference_component.name",
			above("chat-qwen-7b", 10), below("chat-qwen-7b", 5)},
		{`max by (` + ic + `) ({"sglang:token_usage", ` + ic + `="chat-qwen-7b"})`, "aws.sagemaker.inference_component.name",
			below("chat-qwen-7b", 0.3), below("chat-qwen-7b", 0.3)},
		{`histogram_avg(sum by (InferenceComponentName) (sum_over_time(ModelLatencyForIc{InferenceComponentName="chat-qwen-7b"}[15m]))) / 1e6`, "InferenceComponentName",
			below("chat-qwen-7b", 4), below("chat-qwen-7b", 4)},
		{`histogram_avg(sum by (InferenceComponentName) (sum_over_time(OverheadLatencyForIc{InferenceComponentName="chat-qwen-7b"}[15m]))) / 1e3`, "InferenceComponentName",
			below("chat-qwen-7b", 15), below("chat-qwen-7b", 15)},
	},
	"gpu-memory-leak": {
		{`max(delta(DCGM_FI_DEV_FB_USED[2h]))`, "", above("", 500), below("", 1)},
	},
	"model-crash": {
		{`min(DCGM_FI_DEV_FB_USED{"aws.sagemaker.endpoint.name"="summarize"})`, "", below("", 100), above("", 10000)},
		{`max(sum by (InstanceId) (sum_over_time(Invocation5XXErrorsByInstanceId{EndpointName="summarize"}[30m])))`, "", above("", 100), below("", 5)},
		{`sum(sum_over_time(InvocationModelErrors{EndpointName="summarize"}[30m]))`, "", above("", 100), below("", 5)},
	},
	"az-imbalance": {
		{`sum by (AvailabilityZone) (sum_over_time(InvocationsByAzByInstanceType{EndpointName="chat-ic"}[30m]))`, "AvailabilityZone",
			func(m map[string]float64) bool { return m["us-east-1c"] == 0 && m["us-east-1a"] > 1000 },
			above("us-east-1c", 1000)},
		// The AZ's instances are still up.
		{`count by ("@resource.cloud.availability_zone") (node_memory_MemTotal_bytes{"aws.sagemaker.endpoint.name"="chat-ic"})`, "@resource.cloud.availability_zone",
			above("us-east-1c", 1), above("us-east-1c", 1)},
	},
	"scaling-not-firing": {
		{`avg_over_time(ConcurrentRequestsPerCopy{InferenceComponentName="code-llama-8b"}[1h])`, "InferenceComponentName",
			above("code-llama-8b", 16*1.5), below("code-llama-8b", 16)},
		{`count_over_time(e2e_duration{` + ic + `="code-llama-8b", "aws.sagemaker.scaling.direction"="ScaleOut"}[85m])`, "", empty, func(map[string]float64) bool { return true }},
		// Copies stay flat over the incident (healthy may or may not scale in that window).
		{`max_over_time(count({"vllm:num_requests_running", ` + ic + `="code-llama-8b"})[80m:5m]) - min_over_time(count({"vllm:num_requests_running", ` + ic + `="code-llama-8b"})[80m:5m])`, "",
			below("", 0.5), func(map[string]float64) bool { return true }},
	},
	"slow-cold-start": {
		{`max(max_over_time(model_download_time{` + ic + `="chat-llama-8b"}[85m]) / max_over_time(cold_start_duration{` + ic + `="chat-llama-8b"}[85m]))`, "",
			above("", 0.8), func(m map[string]float64) bool { return len(m) == 0 || m[""] < 0.5 }},
		{`max(max_over_time(model_download_time[4h]) / max_over_time(cold_start_duration[4h]))`, "", above("", 0.8), below("", 0.5)},
	},
	"enrichment-off": {
		// Native series arrive, enriched vended metrics do not.
		{`count(Invocations)`, "", empty, above("", 0.5)},
		{`count(DCGM_FI_DEV_GPU_UTIL)`, "", above("", 0.5), above("", 0.5)},
	},
	"gpu-degrade": {
		// One GPU hot and thermally throttled, with XID 48 (double-bit ECC) raised.
		{`count(DCGM_FI_DEV_GPU_TEMP >= 87 and on (UUID) DCGM_FI_DEV_CLOCK_THROTTLE_REASONS == 96)`, "", above("", 0.5), empty},
		{`count(DCGM_FI_DEV_XID_ERRORS == 48)`, "", above("", 0.5), empty},
	},
	"ice-exhaustion": {
		{`count by ("aws.sagemaker.instance_type") (count by ("aws.sagemaker.instance_type", "aws.sagemaker.availability_zone") (count_over_time(ice_count[2h])))`, "aws.sagemaker.instance_type",
			above("ml.g5.12xlarge", 2.5), empty},
	},
}

func TestEveryScenarioIsVisibleAndAbsentWhenHealthy(t *testing.T) {
	healthy := start(t, "healthy")
	for _, sc := range simulator.Scenarios() {
		if sc.Name == "healthy" {
			continue
		}
		checks, ok := scenarioChecks[sc.Name]
		if !ok {
			t.Errorf("scenario %s has no PromQL check", sc.Name)
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			st := start(t, sc.Name)
			for _, c := range checks {
				if got := instant(t, st, c.expr, c.by); !c.incident(got) {
					t.Errorf("incident not visible: %s => %v", c.expr, got)
				}
				if got := instant(t, healthy, c.expr, c.by); !c.normal(got) {
					t.Errorf("healthy looks wrong: %s => %v", c.expr, got)
				}
			}
		})
	}
}

func TestStartRejectsBadOptionsAndUnsignedRequests(t *testing.T) {
	// Each bad option is an *OptionError naming its flag; want tells the problems of one
	// flag apart.
	for _, o := range []struct {
		opts         Options
		option, want string
	}{
		{Options{Addr: "0.0.0.0:0"}, "addr", "not a loopback address"},
		{Options{Addr: "nope"}, "addr", "use host:port"},
		{Options{AccessKey: "AKIAONLY"}, "access-key", "both the access key and the secret key"},
		{Options{History: 8 * 24 * time.Hour}, "history", "7-day"},
		{Options{Scenario: "meltdown"}, "scenario", `unknown scenario "meltdown"`},
		{Options{Live: true, End: PinnedEnd}, "no-live", "cannot keep appending live"},
	} {
		_, err := Start(context.Background(), o.opts)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != o.option || !strings.Contains(oe.Problem, o.want) {
			t.Errorf("Start(%+v) = %v, want an OptionError of %s containing %q", o.opts, err, o.option, o.want)
		}
	}
	st, err := Start(context.Background(), Options{History: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !strings.HasPrefix(st.URL, "http://127.0.0.1:") || !strings.HasPrefix(st.AccessKey, "AKIA") || len(st.SecretKey) != 40 {
		t.Errorf("stack: URL %q, key %q, secret length %d", st.URL, st.AccessKey, len(st.SecretKey))
	}
	resp, err := http.Get(st.URL + "/api/v1/query?query=up")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("unsigned request: HTTP %d, want 403", resp.StatusCode)
	}
}

func TestLiveAppendsNewSamples(t *testing.T) {
	st, err := Start(context.Background(), Options{History: 5 * time.Minute, Step: time.Second, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		maxT := st.DB.Head().MaxTime()
		if maxT > st.End.UnixMilli() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no live sample after the history end %v (head max %v)", st.End, time.UnixMilli(maxT))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := st.Close(); err != nil {
		t.Errorf("live simulator stopped with %v", err)
	}
}

// TestDataSourceSettings checks the settings against the plugin's own loader, so a
// renamed key fails here rather than in every test that configures a data source.
func TestDataSourceSettings(t *testing.T) {
	st := &Stack{URL: "http://127.0.0.1:9", Region: "eu-west-1", AccessKey: "AKIAEXAMPLE", SecretKey: "secret", Step: 30 * time.Second}
	jd, secure := st.DataSourceSettings()
	s := loadSettings(t, jd, secure)
	if s.Auth.AuthType != awsauth.AuthKeys || s.Auth.Region != st.Region || s.Auth.Endpoint != st.URL ||
		s.Auth.AccessKey.Reveal() != st.AccessKey || s.Auth.SecretKey.Reveal() != st.SecretKey || s.TimeInterval != st.Step {
		t.Fatalf("loaded settings %+v do not match the stack at %s", s, st.URL)
	}
}

// loadSettings reads jsonData and secureJsonData with the plugin's own loader.
func loadSettings(t *testing.T, jsonData any, secure map[string]string) *models.Settings {
	t.Helper()
	raw, err := json.Marshal(jsonData)
	if err != nil {
		t.Fatal(err)
	}
	s, err := models.LoadSettings(backend.DataSourceInstanceSettings{JSONData: raw, DecryptedSecureJSONData: secure})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
