package awsemu_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudtrail"
	cttypes "github.com/aws/aws-sdk-go-v2/service/cloudtrail/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/smithy-go"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// trail is the raw SDK CloudTrail client at the stack, one attempt per call.
func trail(st *stack.Stack) *cloudtrail.Client {
	return cloudtrail.NewFromConfig(aws.Config{
		Region: st.Region, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""),
	}, func(o *cloudtrail.Options) { o.BaseEndpoint = aws.String(st.URL) })
}

// plugin is the plugin's CloudTrail client at the stack, as a data source with the
// emulator as custom endpoint builds it (paced, retried, classified).
func plugin(t *testing.T, st *stack.Stack) awsapi.ChangeLister {
	t.Helper()
	ep, err := awsauth.ResolveEndpoint(awsauth.Settings{Endpoint: st.URL, Region: st.Region})
	if err != nil {
		t.Fatal(err)
	}
	return awsapi.NewChanges(credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), ep, nil)
}

// lookup pages through LookupEvents at pageSize, waiting out the emulator's rate between
// pages (this client is not paced).
func lookup(t *testing.T, ct *cloudtrail.Client, in *cloudtrail.LookupEventsInput) []cttypes.Event {
	t.Helper()
	var out []cttypes.Event
	p := cloudtrail.NewLookupEventsPaginator(ct, in)
	for p.HasMorePages() {
		time.Sleep(600 * time.Millisecond)
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("LookupEvents: %v", err)
		}
		if len(pg.Events) > int(aws.ToInt32(in.MaxResults)) {
			t.Fatalf("page of %d events for MaxResults %d", len(pg.Events), aws.ToInt32(in.MaxResults))
		}
		out = append(out, pg.Events...)
	}
	return out
}

func TestLookupEventsPagesAndFilters(t *testing.T) {
	st := start(t, stack.Options{Scenario: "bad-deploy"})
	ct := trail(st)
	all := lookup(t, ct, &cloudtrail.LookupEventsInput{MaxResults: aws.Int32(1)})
	if len(all) < 2 {
		t.Fatalf("bad-deploy's history has %d events, want its two image updates", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].EventTime.After(*all[i-1].EventTime) {
			t.Errorf("events not newest first: %v after %v", all[i].EventTime, all[i-1].EventTime)
		}
	}
	newest := all[0]
	for _, tc := range []struct {
		key, value string
		want       int
	}{
		{"EventName", "UpdateInferenceComponent", len(all)},
		{"EventName", "UpdateEndpoint", 0},
		{"EventSource", changes.SourceSageMaker, len(all)},
		{"EventSource", changes.SourceAutoScaling, 0},
		{"ResourceName", "chat-llama-8b", len(all)},
		{"ResourceName", "code-llama-8b", 0},
	} {
		got := lookup(t, ct, &cloudtrail.LookupEventsInput{MaxResults: aws.Int32(50), LookupAttributes: []cttypes.LookupAttribute{
			{AttributeKey: cttypes.LookupAttributeKey(tc.key), AttributeValue: aws.String(tc.value)}}})
		if len(got) != tc.want {
			t.Errorf("%s=%s: %d events, want %d", tc.key, tc.value, len(got), tc.want)
		}
	}
	// The time range: only the newest event is at or after its own time.
	got := lookup(t, ct, &cloudtrail.LookupEventsInput{MaxResults: aws.Int32(50), StartTime: newest.EventTime})
	if len(got) != 1 || aws.ToString(got[0].EventId) != aws.ToString(newest.EventId) {
		t.Errorf("StartTime at the newest event: %d events", len(got))
	}
	for _, bad := range []*cloudtrail.LookupEventsInput{
		{MaxResults: aws.Int32(51)},
		{NextToken: aws.String("bogus")},
		{StartTime: aws.Time(newest.EventTime.Add(time.Hour)), EndTime: newest.EventTime},
		{LookupAttributes: []cttypes.LookupAttribute{{AttributeKey: cttypes.LookupAttributeKeyUsername, AttributeValue: aws.String("x")}}},
	} {
		time.Sleep(600 * time.Millisecond)
		var apiErr smithy.APIError
		if _, err := ct.LookupEvents(context.Background(), bad); !errors.As(err, &apiErr) || !strings.HasPrefix(apiErr.ErrorCode(), "Invalid") {
			t.Errorf("%+v: %v, want an Invalid…Exception", bad, err)
		}
	}

	// The plugin's client reads the same history into changes: the deployment with the image
	// it replaced, by the deployer's ARN, and nothing of the caller's credentials.
	list, err := plugin(t, st).Changes(context.Background(), awsapi.ChangeQuery{From: st.End.Add(-3 * time.Hour), To: st.End})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Changes) != len(all) || list.Unreadable != 0 {
		t.Fatalf("plugin read %d changes (%d unreadable), the history has %d", len(list.Changes), list.Unreadable, len(all))
	}
	last := list.Changes[len(list.Changes)-1]
	if last.Resource != "chat-llama-8b" || last.Kind != changes.KindComponent || !strings.Contains(last.Who, ":assumed-role/deployer/") ||
		len(last.Diff) == 0 || last.Diff[0].Field != changes.FieldImage || !strings.HasSuffix(last.Diff[0].From, ":0.6.3") || !strings.HasSuffix(last.Diff[0].To, ":0.6.4") {
		t.Errorf("the deployment reads as %+v", last)
	}
	for _, e := range all {
		for _, c := range list.Changes {
			s := strings.Join([]string{c.Who, c.Resource, c.EventID, c.Account}, " ")
			for _, d := range c.Diff {
				s += " " + d.From + " " + d.To
			}
			if strings.Contains(s, aws.ToString(e.AccessKeyId)) || strings.Contains(s, "SessionToken") || strings.Contains(s, "hf_") {
				t.Errorf("a change carries the caller's credentials or the container's environment: %s", s)
			}
		}
	}

	// The inventory shows the deployment: the IC runs the new image.
	_, sm := clients(st)
	d, err := sm.DescribeInferenceComponent(context.Background(), &sagemaker.DescribeInferenceComponentInput{InferenceComponentName: aws.String("chat-llama-8b")})
	if err != nil || d.Specification == nil || d.Specification.Container == nil || d.Specification.Container.DeployedImage == nil ||
		aws.ToString(d.Specification.Container.DeployedImage.SpecifiedImage) != last.Diff[0].To {
		t.Errorf("DescribeInferenceComponent after the deployment: %+v %v, want image %s", d, err, last.Diff[0].To)
	}
}

func TestBadConfigShowsTheNewConfig(t *testing.T) {
	st := start(t, stack.Options{Scenario: "bad-config", History: 2 * time.Hour})
	_, sm := clients(st)
	d, err := sm.DescribeEndpoint(context.Background(), &sagemaker.DescribeEndpointInput{EndpointName: aws.String("summarize")})
	if err != nil || aws.ToString(d.EndpointConfigName) != "summarize-config-v2" {
		t.Fatalf("DescribeEndpoint summarize: config %q %v, want summarize-config-v2", aws.ToString(d.EndpointConfigName), err)
	}
	if _, err := sm.DescribeEndpointConfig(context.Background(), &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: d.EndpointConfigName}); err != nil {
		t.Errorf("the new config cannot be described: %v", err)
	}
}

func TestLookupEventsThrottlesBeyondTwoASecond(t *testing.T) {
	st := start(t, stack.Options{Scenario: "bad-deploy", History: 2 * time.Hour})
	ct := trail(st)
	// Unpaced calls beyond the burst are refused with CloudTrail's throttling code.
	throttled := 0
	for range 6 {
		var apiErr smithy.APIError
		_, err := ct.LookupEvents(context.Background(), &cloudtrail.LookupEventsInput{})
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "ThrottlingException" {
			throttled++
		} else if err != nil {
			t.Fatalf("LookupEvents: %v", err)
		}
	}
	if throttled < 3 {
		t.Fatalf("%d of 6 back-to-back calls throttled, want at least 3 (burst 2 at 2/s)", throttled)
	}

	// The plugin's client, started on an empty bucket, waits and retries: its lookups (one
	// per event name) all succeed.
	q := awsapi.ChangeQuery{From: st.End.Add(-2 * time.Hour), To: st.End}
	if _, err := plugin(t, st).Changes(context.Background(), q); err != nil {
		t.Fatalf("the paced client failed after the burst: %v", err)
	}

	// While another client takes every token, the plugin's reports the throttling, named.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_, _ = ct.LookupEvents(ctx, &cloudtrail.LookupEventsInput{})
		}
	}()
	_, err := plugin(t, st).Changes(context.Background(), q)
	stop()
	wg.Wait()
	var e *awsapi.Error
	if !errors.As(err, &e) || !e.Throttled() || e.Action != awsapi.ActionLookupEvents || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("under another client's load: %v, want a throttling error of %s", err, awsapi.ActionLookupEvents)
	}
}

func TestLookupEventsDeniedIsNamed(t *testing.T) {
	st := start(t, stack.Options{Scenario: "bad-deploy", History: 10 * time.Minute, Deny: []string{awsapi.ActionLookupEvents}})
	c := plugin(t, st)
	for name, err := range map[string]error{
		"probe": c.ProbeChanges(context.Background()),
		"changes": func() error {
			_, err := c.Changes(context.Background(), awsapi.ChangeQuery{From: st.End.Add(-time.Hour), To: st.End})
			return err
		}(),
	} {
		var p *awsapi.PermissionError
		if !errors.As(err, &p) || p.Action != awsapi.ActionLookupEvents || !strings.Contains(err.Error(), "cloudtrail:LookupEvents") {
			t.Errorf("%s with LookupEvents denied: %v, want a PermissionError naming cloudtrail:LookupEvents", name, err)
		}
	}
	// The rest of the control plane is not denied.
	_, sm := clients(st)
	if _, err := sm.ListEndpoints(context.Background(), &sagemaker.ListEndpointsInput{}); err != nil {
		t.Errorf("ListEndpoints with only LookupEvents denied: %v", err)
	}
}

// The change history read through the plugin's client ties each incident to its change:
// bad-deploy's and bad-config's call is the probable cause, within five minutes before
// the incident's start; benign-deploy's deployment elsewhere is never blamed. On the
// default fleet and a generated one.
func TestChangesAttributeTheScenariosIncident(t *testing.T) {
	for _, tc := range []struct {
		scenario, event string // event "" : nothing may be blamed
	}{
		{"bad-deploy", "UpdateInferenceComponent"},
		{"bad-config", "UpdateEndpoint"},
		{"benign-deploy", ""},
	} {
		for _, shape := range []uint64{0, 11} {
			t.Run(fmt.Sprintf("%s/%d", tc.scenario, shape), func(t *testing.T) {
				t.Parallel()
				st := startGenerated(t, tc.scenario, shape)
				in := st.Incident
				kind := map[string]string{"inference-component": changes.KindComponent, "endpoint": changes.KindEndpoint}[in.Level]
				if kind == "" || in.Start.IsZero() {
					t.Fatalf("incident %+v: want an IC or an endpoint with a start", in)
				}
				list, err := plugin(t, st).Changes(context.Background(), awsapi.ChangeQuery{From: st.End.Add(-3 * time.Hour), To: st.End})
				if err != nil {
					t.Fatal(err)
				}
				if len(list.Changes) == 0 {
					t.Fatal("no changes in the scenario's history")
				}
				causes := changes.Attribute(changes.Signal{Kind: kind, Resource: in.Name, Endpoint: in.Endpoint, Start: in.Start}, list.Changes, changes.DefaultWindow)
				if tc.event == "" {
					if len(causes) > 0 {
						t.Fatalf("%s on %s blamed for %s %s", causes[0].Change.Action, causes[0].Change.Resource, in.Level, in.Name)
					}
					return
				}
				if len(causes) == 0 {
					t.Fatalf("nothing blamed for %s %s (start %s) among %+v", in.Level, in.Name, in.Start, list.Changes)
				}
				top := causes[0]
				if top.Change.Action != tc.event || top.Lead > 5*time.Minute || top.Change.Resource != in.Name {
					t.Errorf("probable cause %s on %s, %v before the start; want %s on %s within 5 minutes", top.Change.Action, top.Change.Resource, top.Lead, tc.event, in.Name)
				}
			})
		}
	}
}

// startGenerated starts a stack of the default fleet (shape 0) or of a fleet generated from
// shape that can play the scenario.
func startGenerated(t *testing.T, scenario string, shape uint64) *stack.Stack {
	t.Helper()
	o := stack.Options{Scenario: scenario, End: stack.PinnedEnd, History: 3 * time.Hour}
	if shape == 0 {
		return start(t, o)
	}
	r := rand.New(rand.NewPCG(shape, 36))
	var err error
	for range 40 {
		if o.Fleet, err = fleet.Generate(r, 24); err != nil {
			continue
		}
		var st *stack.Stack
		if st, err = stack.Start(context.Background(), o); err == nil {
			t.Cleanup(func() { _ = st.Close() })
			return st
		}
	}
	t.Fatalf("no generated fleet of shape %d plays %s: %v", shape, scenario, err)
	return nil
}
