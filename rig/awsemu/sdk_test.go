package awsemu_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/smithy-go"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// start runs a stack with a pinned end (the simulated load follows the hour of day).
func start(t *testing.T, o stack.Options) *stack.Stack {
	t.Helper()
	if o.End.IsZero() {
		o.End = stack.PinnedEnd
	}
	if o.History == 0 {
		o.History = 3 * time.Hour
	}
	st, err := stack.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// clients are the real SDK clients pointed at the stack, as the plugin builds them with a
// custom endpoint; one attempt, so refusals surface as they are.
func clients(st *stack.Stack, opts ...func(*aws.Config)) (*cloudwatch.Client, *sagemaker.Client) {
	cfg := aws.Config{
		Region:           st.Region,
		Credentials:      credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""),
		RetryMaxAttempts: 1,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cw := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(st.URL) })
	sm := sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { o.BaseEndpoint = aws.String(st.URL) })
	return cw, sm
}

func alarms(t *testing.T, cw *cloudwatch.Client, pageSize int32) []cwtypes.MetricAlarm {
	t.Helper()
	var out []cwtypes.MetricAlarm
	p := cloudwatch.NewDescribeAlarmsPaginator(cw, &cloudwatch.DescribeAlarmsInput{MaxRecords: aws.Int32(pageSize)})
	pages := 0
	for p.HasMorePages() {
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("DescribeAlarms page %d: %v", pages, err)
		}
		if len(pg.MetricAlarms) > int(pageSize) {
			t.Fatalf("page of %d alarms for MaxRecords %d", len(pg.MetricAlarms), pageSize)
		}
		pages++
		out = append(out, pg.MetricAlarms...)
	}
	return out
}

func history(t *testing.T, cw *cloudwatch.Client, in *cloudwatch.DescribeAlarmHistoryInput) []cwtypes.AlarmHistoryItem {
	t.Helper()
	var out []cwtypes.AlarmHistoryItem
	p := cloudwatch.NewDescribeAlarmHistoryPaginator(cw, in)
	for p.HasMorePages() {
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("DescribeAlarmHistory: %v", err)
		}
		out = append(out, pg.AlarmHistoryItems...)
	}
	return out
}

// inventory lists endpoints and ICs page by page and describes each.
func inventory(t *testing.T, sm *sagemaker.Client, pageSize int32) (endpoints, ics []string) {
	t.Helper()
	ctx := context.Background()
	pe := sagemaker.NewListEndpointsPaginator(sm, &sagemaker.ListEndpointsInput{MaxResults: aws.Int32(pageSize)})
	for pe.HasMorePages() {
		pg, err := pe.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListEndpoints: %v", err)
		}
		for _, e := range pg.Endpoints {
			endpoints = append(endpoints, aws.ToString(e.EndpointName))
		}
	}
	pi := sagemaker.NewListInferenceComponentsPaginator(sm, &sagemaker.ListInferenceComponentsInput{MaxResults: aws.Int32(pageSize)})
	for pi.HasMorePages() {
		pg, err := pi.NextPage(ctx)
		if err != nil {
			t.Fatalf("ListInferenceComponents: %v", err)
		}
		for _, c := range pg.InferenceComponents {
			ics = append(ics, aws.ToString(c.InferenceComponentName))
		}
	}
	return endpoints, ics
}

func TestSDKRoundTripsEveryOperation(t *testing.T) {
	st := start(t, stack.Options{Scenario: "healthy"})
	cw, sm := clients(st)
	ctx := context.Background()
	f := fleet.Default()

	got := alarms(t, cw, 4)
	var names, want []string
	for _, a := range got {
		names = append(names, aws.ToString(a.AlarmName))
		crit, ok := a.EvaluationCriteria.(*cwtypes.EvaluationCriteriaMemberPromQLCriteria)
		if !ok || aws.ToString(crit.Value.Query) == "" || crit.Value.PendingPeriod == nil {
			t.Errorf("%s: EvaluationCriteria %#v is not a PromQL criteria with a query", aws.ToString(a.AlarmName), a.EvaluationCriteria)
		}
		if a.StateValue == "" || a.StateUpdatedTimestamp == nil || aws.ToString(a.AlarmArn) == "" || len(a.Dimensions) != 0 {
			t.Errorf("%s: state %q updated %v arn %q dimensions %v", aws.ToString(a.AlarmName), a.StateValue, a.StateUpdatedTimestamp, aws.ToString(a.AlarmArn), a.Dimensions)
		}
	}
	for _, a := range f.AlarmDefs() {
		want = append(want, a.Name)
	}
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("DescribeAlarms in pages of 4 = %v, want %v", names, want)
	}
	one, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("kv-cache-chat-")})
	if err != nil || len(one.MetricAlarms) != 2 {
		t.Errorf("AlarmNamePrefix kv-cache-chat-: %d alarms, %v", len(one.MetricAlarms), err)
	}
	if _, err := cw.DescribeAlarmContributors(ctx, &cloudwatch.DescribeAlarmContributorsInput{AlarmName: aws.String("kv-cache-chat-llama-8b")}); err != nil {
		t.Errorf("DescribeAlarmContributors: %v", err)
	}
	_, err = cw.DescribeAlarmContributors(ctx, &cloudwatch.DescribeAlarmContributorsInput{AlarmName: aws.String("no-such-alarm")})
	var notFound *cwtypes.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("unknown alarm: %v, want ResourceNotFoundException", err)
	}
	_, err = cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{NextToken: aws.String("bogus")})
	var badToken *cwtypes.InvalidNextToken
	if !errors.As(err, &badToken) {
		t.Errorf("bogus NextToken: %v, want InvalidNextToken", err)
	}
	history(t, cw, &cloudwatch.DescribeAlarmHistoryInput{MaxRecords: aws.Int32(3)})

	eps, ics := inventory(t, sm, 2)
	var wantEPs, wantICs []string
	for _, e := range f.Endpoints {
		wantEPs = append(wantEPs, e.Name)
		out, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(e.Name)})
		if err != nil {
			t.Fatalf("DescribeEndpoint %s: %v", e.Name, err)
		}
		if len(out.ProductionVariants) != 1 || aws.ToInt32(out.ProductionVariants[0].CurrentInstanceCount) != int32(e.InstanceCount()) || out.CreationTime == nil {
			t.Errorf("DescribeEndpoint %s: %+v", e.Name, out.ProductionVariants)
		}
		cfg, err := sm.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: out.EndpointConfigName})
		if err != nil || len(cfg.ProductionVariants) != 1 || string(cfg.ProductionVariants[0].InstanceType) != e.Instances[0].Type {
			t.Errorf("DescribeEndpointConfig %s: %+v %v", aws.ToString(out.EndpointConfigName), cfg, err)
		}
		for _, ic := range e.InferenceComponents {
			wantICs = append(wantICs, ic.Name)
			d, err := sm.DescribeInferenceComponent(ctx, &sagemaker.DescribeInferenceComponentInput{InferenceComponentName: aws.String(ic.Name)})
			if err != nil {
				t.Fatalf("DescribeInferenceComponent %s: %v", ic.Name, err)
			}
			copies := aws.ToInt32(d.RuntimeConfig.CurrentCopyCount)
			if aws.ToString(d.EndpointName) != e.Name || copies < int32(ic.MinCopies) || copies > int32(ic.MaxCopies) || aws.ToString(d.Specification.ModelName) != ic.Model {
				t.Errorf("DescribeInferenceComponent %s: endpoint %s copies %d model %s", ic.Name, aws.ToString(d.EndpointName), copies, aws.ToString(d.Specification.ModelName))
			}
		}
	}
	sort.Strings(eps)
	sort.Strings(ics)
	sort.Strings(wantEPs)
	sort.Strings(wantICs)
	if fmt.Sprint(eps) != fmt.Sprint(wantEPs) || fmt.Sprint(ics) != fmt.Sprint(wantICs) {
		t.Errorf("listed endpoints %v ICs %v, want %v %v", eps, ics, wantEPs, wantICs)
	}
	_, err = sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("missing")})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" || !strings.Contains(apiErr.ErrorMessage(), "Could not find endpoint") {
		t.Errorf("unknown endpoint: %v, want ValidationException", err)
	}
	_, err = sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{MaxResults: aws.Int32(500)})
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		t.Errorf("MaxResults 500: %v, want ValidationException", err)
	}
}

func TestSignatureForAnotherServiceOrRegionIsRefused(t *testing.T) {
	st := start(t, stack.Options{Scenario: "healthy", History: 10 * time.Minute})
	cw, sm := clients(st)
	ctx := context.Background()
	var apiErr smithy.APIError
	_, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}, cloudwatch.WithSigV4SigningName("sagemaker"))
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidSignatureException" || !strings.Contains(apiErr.ErrorMessage(), "monitoring") {
		t.Errorf("CloudWatch signed for sagemaker: %v", err)
	}
	_, err = sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{}, sagemaker.WithSigV4SigningName("monitoring"))
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidSignatureException" || !strings.Contains(apiErr.ErrorMessage(), "sagemaker") {
		t.Errorf("SageMaker signed for monitoring: %v", err)
	}
	cwWest, smWest := clients(st, func(c *aws.Config) { c.Region = "eu-west-1" })
	if _, err := cwWest.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidSignatureException" || !strings.Contains(apiErr.ErrorMessage(), "region") {
		t.Errorf("CloudWatch signed for eu-west-1: %v", err)
	}
	if _, err := smWest.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidSignatureException" || !strings.Contains(apiErr.ErrorMessage(), "region") {
		t.Errorf("SageMaker signed for eu-west-1: %v", err)
	}
	if _, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); err != nil {
		t.Errorf("a correct signature was refused: %v", err)
	}
}

func TestDeniedActionsAreAccessDenied(t *testing.T) {
	st := start(t, stack.Options{Scenario: "healthy", History: 10 * time.Minute, Deny: []string{"sagemaker:ListEndpoints", "cloudwatch:DescribeAlarms"}})
	cw, sm := clients(st)
	ctx := context.Background()
	var apiErr smithy.APIError
	_, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDenied" || !strings.Contains(apiErr.ErrorMessage(), "cloudwatch:DescribeAlarms") {
		t.Errorf("DescribeAlarms: %v, want AccessDenied naming the action", err)
	}
	_, err = sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{})
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDeniedException" || !strings.Contains(apiErr.ErrorMessage(), "sagemaker:ListEndpoints") {
		t.Errorf("ListEndpoints: %v, want AccessDeniedException naming the action", err)
	}
	// Actions not denied still work.
	if _, err := cw.DescribeAlarmHistory(ctx, &cloudwatch.DescribeAlarmHistoryInput{}); err != nil {
		t.Errorf("DescribeAlarmHistory: %v", err)
	}
	if _, err := sm.ListInferenceComponents(ctx, &sagemaker.ListInferenceComponentsInput{}); err != nil {
		t.Errorf("ListInferenceComponents: %v", err)
	}
	_, err = stack.Start(ctx, stack.Options{History: 10 * time.Minute, End: stack.PinnedEnd, Deny: []string{"sagemaker:DeleteEndpoint"}})
	var oerr *stack.OptionError
	if !errors.As(err, &oerr) || oerr.Option != "deny" || !strings.Contains(err.Error(), "sagemaker:ListEndpoints") {
		t.Errorf("unknown action to deny: %v, want an OptionError listing the actions", err)
	}
}

func TestFaultsApplyToControlPlaneCalls(t *testing.T) {
	ctx := context.Background()
	t.Run("error rate", func(t *testing.T) {
		st := start(t, stack.Options{History: 10 * time.Minute, Faults: emulator.Faults{ErrorRate: 1}})
		cw, sm := clients(st)
		var re interface{ HTTPStatusCode() int }
		if _, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); !errors.As(err, &re) || re.HTTPStatusCode() != 503 {
			t.Errorf("DescribeAlarms: %v, want 503", err)
		}
		if _, err := sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{}); !errors.As(err, &re) || re.HTTPStatusCode() != 503 {
			t.Errorf("ListEndpoints: %v, want 503", err)
		}
	})
	t.Run("throttling is retried", func(t *testing.T) {
		st := start(t, stack.Options{History: 10 * time.Minute, Faults: emulator.Faults{TPS: 1}})
		cw, sm := clients(st)
		var apiErr smithy.APIError
		// One request per second passes: the first of each pair, the second is throttled.
		for _, call := range []func() error{
			func() error { _, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); return err },
			func() error { _, err := sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{}); return err },
		} {
			_ = call()
			err := call()
			if !errors.As(err, &apiErr) || !slices.Contains([]string{"Throttling", "ThrottlingException"}, apiErr.ErrorCode()) {
				t.Errorf("second call within a second: %v, want throttling", err)
			}
		}
		cwRetry, _ := clients(st, func(c *aws.Config) { c.RetryMaxAttempts = 5 })
		if _, err := cwRetry.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); err != nil {
			t.Errorf("the SDK's retries did not get through the throttling: %v", err)
		}
	})
	t.Run("truncated body", func(t *testing.T) {
		st := start(t, stack.Options{History: 10 * time.Minute, Faults: emulator.Faults{TruncateRate: 1}})
		_, sm := clients(st)
		if _, err := sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{}); err == nil {
			t.Error("a truncated body was accepted")
		}
	})
}

func TestScenarioAlarmStates(t *testing.T) {
	const (
		ic   = "aws.sagemaker.inference_component.name"
		ep   = "aws.sagemaker.endpoint.name"
		host = "@resource.host.id"
	)
	// who is the series of the first alarm in ALARM that must be its one contributor.
	type who struct{ label, value string }
	for _, tt := range []struct {
		scenario string
		inAlarm  []string
		who      who
	}{
		{"healthy", nil, who{}},
		// Each scenario drives its own default alarm and no other.
		{"kv-saturation", []string{"kv-cache-chat-llama-8b", "ttft-p99-chat-llama-8b"}, who{ic, "chat-llama-8b"}},
		{"engine-queueing", []string{"ttft-p99-chat-qwen-7b"}, who{ic, "chat-qwen-7b"}},
		{"gpu-memory-leak", []string{"gpu-memory"}, who{ep, "chat-ic"}},
		{"model-crash", []string{"5xx-summarize"}, who{"EndpointName", "summarize"}},
		{"scaling-not-firing", nil, who{}}, // no default alarm watches the copy count or load
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			st := start(t, stack.Options{Scenario: tt.scenario})
			cw, _ := clients(st)
			ctx := context.Background()
			var alarming []string
			for _, a := range alarms(t, cw, 100) {
				name := aws.ToString(a.AlarmName)
				if a.StateValue == cwtypes.StateValueAlarm {
					alarming = append(alarming, name)
				} else if a.StateValue != cwtypes.StateValueOk {
					t.Errorf("%s is %s: %s", name, a.StateValue, aws.ToString(a.StateReason))
				}
			}
			if fmt.Sprint(alarming) != fmt.Sprint(tt.inAlarm) {
				t.Fatalf("alarms in ALARM = %v, want %v", alarming, tt.inAlarm)
			}
			items := history(t, cw, &cloudwatch.DescribeAlarmHistoryInput{HistoryItemType: cwtypes.HistoryItemTypeStateUpdate, ScanBy: cwtypes.ScanByTimestampAscending})
			if len(tt.inAlarm) == 0 {
				if len(items) != 0 {
					t.Errorf("history has %d transitions, the first: %s", len(items), aws.ToString(items[0].HistorySummary))
				}
				return
			}
			name := tt.inAlarm[0]
			var toAlarm *cwtypes.AlarmHistoryItem
			for i, h := range items {
				if aws.ToString(h.AlarmName) == name && aws.ToString(h.HistorySummary) == "Alarm updated from OK to ALARM" &&
					strings.Contains(aws.ToString(h.HistoryData), `"oldState":{"stateValue":"OK"}`) {
					toAlarm = &items[i]
				}
			}
			if toAlarm == nil || toAlarm.Timestamp.Before(st.End.Add(-3*time.Hour)) {
				t.Fatalf("no OK → ALARM transition of %s within the history in %d history items", name, len(items))
			}
			cs, err := cw.DescribeAlarmContributors(ctx, &cloudwatch.DescribeAlarmContributorsInput{AlarmName: aws.String(name)})
			if err != nil || len(cs.AlarmContributors) != 1 || cs.AlarmContributors[0].ContributorAttributes[tt.who.label] != tt.who.value {
				t.Fatalf("contributors of %s: %+v %v, want one with %s=%s", name, cs, err, tt.who.label, tt.who.value)
			}
			attrs := cs.AlarmContributors[0].ContributorAttributes
			if name == "gpu-memory" && attrs[host] == "" {
				t.Errorf("the GPU memory contributor does not name its instance: %v", attrs)
			}
			per := history(t, cw, &cloudwatch.DescribeAlarmHistoryInput{AlarmName: aws.String(name), AlarmContributorId: cs.AlarmContributors[0].ContributorId})
			if len(per) == 0 || per[0].HistoryItemType != cwtypes.HistoryItemTypeAlarmContributorStateUpdate || per[0].AlarmContributorAttributes[tt.who.label] != tt.who.value {
				t.Errorf("contributor history of %s: %+v", name, per)
			}
		})
	}
}

// randomFleet is a valid fleet of 1-6 endpoints, single-model or with 1-3 ICs, on every
// engine, written as YAML and parsed like a user's file.
func randomFleet(t *testing.T, r *rand.Rand) *fleet.Fleet {
	engines := []string{fleet.EngineVLLM, fleet.EngineSGLang, fleet.EngineDJL}
	f := &fleet.Fleet{Account: "210987654321", Region: "eu-west-1", Models: []fleet.Model{{Name: "m", WeightsMiB: 10000}}}
	for i := range 1 + r.IntN(6) {
		e := fleet.Endpoint{Name: fmt.Sprintf("ep%d-%c%c", i, 'a'+rune(r.IntN(26)), 'a'+rune(r.IntN(26))),
			Instances: []fleet.InstanceGroup{{Type: "ml.g5.12xlarge", AZ: "eu-west-1a", Count: 2 + r.IntN(2), GPUs: 4, GPUMemoryMiB: 23028}}}
		if r.IntN(2) == 0 {
			for j := range 1 + r.IntN(3) {
				e.InferenceComponents = append(e.InferenceComponents, fleet.InferenceComponent{
					Name: fmt.Sprintf("%s-ic%d", e.Name, j), Model: "m", Engine: engines[r.IntN(2)], Copies: 1, MaxCopies: 1 + r.IntN(2),
					Traffic: fleet.Traffic{BaseRPS: 0.5 + 4*r.Float64()}})
			}
		} else {
			e.Model, e.Engine, e.Traffic = "m", engines[r.IntN(3)], fleet.Traffic{BaseRPS: 0.5 + 4*r.Float64()}
		}
		f.Endpoints = append(f.Endpoints, e)
	}
	y, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := fleet.Parse("random.yaml", y)
	if err != nil {
		t.Fatalf("random fleet does not validate: %v\n%s", err, y)
	}
	return parsed
}

func TestRandomFleetsListEveryResourceOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 17))
	for i := range 4 {
		f := randomFleet(t, r)
		t.Run(fmt.Sprintf("fleet%d", i), func(t *testing.T) {
			st := start(t, stack.Options{Fleet: f, History: 15 * time.Minute})
			cw, sm := clients(st)
			eps, ics := inventory(t, sm, int32(1+r.IntN(3)))
			count := map[string]int{}
			for _, n := range append(eps, ics...) {
				count[n]++
			}
			for _, e := range f.Endpoints {
				if count[e.Name] != 1 {
					t.Errorf("endpoint %s listed %d times", e.Name, count[e.Name])
				}
				for _, ic := range e.InferenceComponents {
					if count[ic.Name] != 1 {
						t.Errorf("IC %s listed %d times", ic.Name, count[ic.Name])
					}
				}
			}
			if n := len(eps) + len(ics); n != len(count) {
				t.Errorf("%d resources listed, %d distinct", n, len(count))
			}
			if got, want := len(alarms(t, cw, 7)), len(f.AlarmDefs()); got != want {
				t.Errorf("DescribeAlarms listed %d alarms, the fleet has %d", got, want)
			}
		})
	}
}

// The same fleet, scenario and seed give the same alarm history, whatever was asked first.
func TestAlarmHistoryIsDeterministic(t *testing.T) {
	text := func(cw *cloudwatch.Client) string {
		var b strings.Builder
		for _, h := range history(t, cw, &cloudwatch.DescribeAlarmHistoryInput{ScanBy: cwtypes.ScanByTimestampAscending}) {
			fmt.Fprintf(&b, "%s %s %s %s %s\n", h.Timestamp.UTC(), aws.ToString(h.AlarmName), aws.ToString(h.HistorySummary), aws.ToString(h.AlarmContributorId), aws.ToString(h.HistoryData))
		}
		return b.String()
	}
	st1 := start(t, stack.Options{Scenario: "model-crash", Seed: 5})
	st2 := start(t, stack.Options{Scenario: "model-crash", Seed: 5})
	cw1, _ := clients(st1)
	cw2, _ := clients(st2)
	alarms(t, cw2, 3) // the second stack evaluates on another request first
	h1, h2 := text(cw1), text(cw2)
	if h1 != h2 || h1 == "" {
		t.Errorf("histories differ or are empty:\n%s\n---\n%s", h1, h2)
	}
}
