// Package alarms_test runs the plugin's CloudWatch alarms and SageMaker inventory client
// (pkg/awsapi, the SDK clients on the custom endpoint) against the emulator's control plane.
package alarms_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

const affected = "chat-llama-8b" // kv-saturation's IC (rig/simulator/SCENARIOS.md)

type noSink struct{}

func (noSink) Add(...string) {}

// endpoint is the auth settings of the stack as a custom endpoint, and that endpoint.
func endpoint(t *testing.T, st *stack.Stack) (awsauth.Settings, awsauth.Endpoint) {
	t.Helper()
	s := awsauth.Settings{AuthType: "keys", Region: st.Region, Endpoint: st.URL,
		AccessKey: awsauth.Secret(st.AccessKey), SecretKey: awsauth.Secret(st.SecretKey)}
	ep, err := awsauth.ResolveEndpoint(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, ep
}

// client is the plugin's production awsapi client with the stack as its custom endpoint.
func client(t *testing.T, st *stack.Stack) awsapi.API {
	t.Helper()
	s, ep := endpoint(t, st)
	api, err := awsapi.New(context.Background(), s, ep, noSink{})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

func TestAWSAPIAgainstTheEmulator(t *testing.T) {
	st := dstest.Stack(t, stack.Options{Scenario: "kv-saturation"})
	api := client(t, st)
	ctx := context.Background()

	alarms, err := api.Alarms(ctx, awsapi.AlarmQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var inAlarm []string
	for _, a := range alarms {
		if a.PromQL == "" || a.Updated.IsZero() {
			t.Errorf("%s: PromQL %q, updated %v", a.Name, a.PromQL, a.Updated)
		}
		if a.State == awsapi.StateAlarm {
			inAlarm = append(inAlarm, a.Name)
		}
	}
	if want := []string{"kv-cache-" + affected, "ttft-p99-" + affected}; !slices.Equal(inAlarm, want) || len(alarms) != len(fleet.Default().AlarmDefs()) {
		t.Errorf("%d alarms, in ALARM %v; want %d alarms, %v", len(alarms), inAlarm, len(fleet.Default().AlarmDefs()), want)
	}

	cs, err := api.Contributors(ctx, "kv-cache-"+affected)
	if err != nil || len(cs) != 1 || cs[0].Attributes["aws.sagemaker.inference_component.name"] != affected || cs[0].Since.IsZero() {
		t.Errorf("contributors: %+v %v", cs, err)
	}

	hist, err := api.History(ctx, awsapi.HistoryQuery{From: st.End.Add(-3 * time.Hour), To: st.End, AlarmNames: []string{"kv-cache-" + affected}})
	if err != nil {
		t.Fatal(err)
	}
	var alarmLevel, contributorLevel bool
	for _, h := range hist {
		if h.From == awsapi.StateOK && h.To == awsapi.StateAlarm {
			if h.Contributor == nil {
				alarmLevel = true
			} else {
				contributorLevel = h.Contributor["aws.sagemaker.inference_component.name"] == affected
			}
		}
	}
	if !alarmLevel || !contributorLevel {
		t.Errorf("history of kv-cache-%s lacks the OK → ALARM transition (alarm %v, contributor %v): %+v", affected, alarmLevel, contributorLevel, hist)
	}

	inv, err := api.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := fleet.Default()
	if len(inv.Endpoints) != len(f.Endpoints) {
		t.Fatalf("inventory has %d endpoints, the fleet %d", len(inv.Endpoints), len(f.Endpoints))
	}
	for _, fe := range f.Endpoints {
		i := slices.IndexFunc(inv.Endpoints, func(e awsapi.Endpoint) bool { return e.Name == fe.Name })
		if i < 0 {
			t.Errorf("endpoint %s missing", fe.Name)
			continue
		}
		e := inv.Endpoints[i]
		if len(e.Variants) != 1 || e.Variants[0].InstanceType != fe.Instances[0].Type || e.Variants[0].CurrentInstances != fe.InstanceCount() ||
			len(e.Components) != len(fe.InferenceComponents) || e.Status != "InService" || e.Created.IsZero() {
			t.Errorf("endpoint %s: %+v", fe.Name, e)
		}
		for _, c := range e.Components {
			if c.Endpoint != fe.Name || c.CurrentCopies < 1 || c.Model == "" || c.Modified.Before(c.Created) {
				t.Errorf("IC %s: %+v", c.Name, c)
			}
		}
	}
}

func TestAWSAPIPermissionErrorsNameTheAction(t *testing.T) {
	st := dstest.Stack(t, stack.Options{Scenario: "healthy", Deny: []string{"cloudwatch:DescribeAlarms", "sagemaker:ListEndpoints"}})
	api := client(t, st)
	ctx := context.Background()
	_, err := api.Alarms(ctx, awsapi.AlarmQuery{})
	var p *awsapi.PermissionError
	if !errors.As(err, &p) || p.Action != "cloudwatch:DescribeAlarms" {
		t.Errorf("Alarms: %v, want a PermissionError for cloudwatch:DescribeAlarms", err)
	}
	_, err = api.Inventory(ctx)
	if !errors.As(err, &p) || p.Action != "sagemaker:ListEndpoints" {
		t.Errorf("Inventory: %v, want a PermissionError for sagemaker:ListEndpoints", err)
	}
	if err := api.ProbeAlarms(ctx); !errors.As(err, &p) || p.Action != "cloudwatch:DescribeAlarms" {
		t.Errorf("ProbeAlarms: %v, want a PermissionError for cloudwatch:DescribeAlarms", err)
	}
	if err := api.ProbeInventory(ctx); !errors.As(err, &p) || p.Action != "sagemaker:ListEndpoints" {
		t.Errorf("ProbeInventory: %v, want a PermissionError for sagemaker:ListEndpoints", err)
	}
	if _, err := api.History(ctx, awsapi.HistoryQuery{From: st.End.Add(-time.Hour), To: st.End}); err != nil {
		t.Errorf("History is not denied: %v", err)
	}
}
