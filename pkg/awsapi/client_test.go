package awsapi

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/encoding/cbor"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func TestAlarmsPagesAndMaps(t *testing.T) {
	f := newFake(t, testRegion)
	var prefixes []string
	f.cw["DescribeAlarms"] = func(in cbor.Map) reply {
		prefixes = append(prefixes, cstr(in, "AlarmNamePrefix"))
		if types, _ := in["AlarmTypes"].(cbor.List); len(types) != 1 || types[0] != cbor.String("MetricAlarm") {
			t.Errorf("AlarmTypes = %v, want [MetricAlarm]", in["AlarmTypes"])
		}
		if cstr(in, "NextToken") == "" {
			return reply{body: cbor.Map{
				"MetricAlarms": cbor.List{cbor.Map{
					"AlarmName": cs("chat-5xx"), "AlarmArn": cs("arn:aws:cloudwatch:us-east-1:123456789012:alarm:chat-5xx"),
					"StateValue": cs("ALARM"), "StateReason": cs("Threshold Crossed"),
					"StateTransitionedTimestamp": ctime(t0), "StateUpdatedTimestamp": ctime(t0.Add(time.Minute)),
					"Namespace": cs("AWS/SageMaker"), "MetricName": cs("Invocation5XXErrors"),
					"Dimensions": cbor.List{
						cbor.Map{"Name": cs("EndpointName"), "Value": cs("chat")},
						cbor.Map{"Name": cs("VariantName"), "Value": cs("AllTraffic")},
					},
					"ComparisonOperator": cs("GreaterThanThreshold"), "Threshold": cbor.Float64(5),
					"Period": cbor.Uint(300),
				}},
				"NextToken": cs("page-2"),
			}}
		}
		return reply{body: cbor.Map{"MetricAlarms": cbor.List{cbor.Map{
			"AlarmName": cs("kv-cache-chat-llama"), "StateValue": cs("OK"), "StateUpdatedTimestamp": ctime(t0.Add(-time.Hour)),
			"EvaluationCriteria": cbor.Map{"PromQLCriteria": cbor.Map{
				"Query": cs(`max(vllm:gpu_cache_usage_perc{inference_component="chat-llama"}) > 0.9`), "PendingPeriod": cbor.Uint(60),
			}},
			"Threshold": cbor.Float64(0), "EvaluationInterval": cbor.Uint(30), "Period": cbor.Uint(60),
		}}}}
	}
	c, seen := newTestClient(t, f, options{})

	got, err := c.Alarms(context.Background(), AlarmQuery{NamePrefix: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Alarm{{
		Name: "chat-5xx", ARN: "arn:aws:cloudwatch:us-east-1:123456789012:alarm:chat-5xx", State: StateAlarm, Reason: "Threshold Crossed",
		Updated: t0, Namespace: "AWS/SageMaker", Metric: "Invocation5XXErrors",
		Dimensions: map[string]string{"EndpointName": "chat", "VariantName": "AllTraffic"},
		Comparison: "GreaterThanThreshold", Threshold: ptr(5.0), Every: 5 * time.Minute,
	}, {
		Name: "kv-cache-chat-llama", State: StateOK, Updated: t0.Add(-time.Hour),
		PromQL: `max(vllm:gpu_cache_usage_perc{inference_component="chat-llama"}) > 0.9`, Every: 30 * time.Second,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("alarms:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(prefixes, []string{"chat", "chat"}) {
		t.Errorf("prefix sent %q, want it on both pages", prefixes)
	}
	for _, s := range []string{testKey, testSecret, testToken} {
		if !seen.has(s) {
			t.Errorf("the secret sink did not learn a credential the SDK signed with")
		}
	}
}

func TestHistoryBothKindsByTimeAndState(t *testing.T) {
	f := newFake(t, testRegion)
	f.cw["DescribeAlarmHistory"] = func(in cbor.Map) reply {
		kind, name := cstr(in, "HistoryItemType"), cstr(in, "AlarmName")
		start, _ := cbor.AsTime(in["StartDate"])
		end, _ := cbor.AsTime(in["EndDate"])
		if !start.Equal(t0.Add(-time.Hour)) || !end.Equal(t0) {
			t.Errorf("range sent %v..%v, want %v..%v", start, end, t0.Add(-time.Hour), t0)
		}
		switch {
		case kind == "StateUpdate" && cstr(in, "NextToken") == "":
			return reply{body: cbor.Map{"AlarmHistoryItems": cbor.List{cbor.Map{
				"AlarmName": cs(name), "Timestamp": ctime(t0.Add(-10 * time.Minute)), "HistoryItemType": cs(kind),
				"HistorySummary": cs("Alarm updated from OK to ALARM"),
				"HistoryData":    cs(`{"version":"1.0","oldState":{"stateValue":"OK"},"newState":{"stateValue":"ALARM","stateReason":"x"}}`),
			}}, "NextToken": cs("more")}}
		case kind == "StateUpdate":
			return reply{body: cbor.Map{"AlarmHistoryItems": cbor.List{cbor.Map{
				"AlarmName": cs(name), "Timestamp": ctime(t0.Add(-30 * time.Minute)), "HistoryItemType": cs(kind),
				"HistorySummary": cs("Alarm updated from INSUFFICIENT_DATA to OK"), "HistoryData": cs("not json"),
			}}}}
		default:
			return reply{body: cbor.Map{"AlarmHistoryItems": cbor.List{cbor.Map{
				"AlarmName": cs(name), "Timestamp": ctime(t0.Add(-5 * time.Minute)), "HistoryItemType": cs(kind),
				"AlarmContributorAttributes": cbor.Map{"inference_component": cs("chat-llama")},
				"HistorySummary":             cs("Contributor updated"),
			}}}}
		}
	}
	c, _ := newTestClient(t, f, options{})
	got, err := c.History(context.Background(), HistoryQuery{From: t0.Add(-time.Hour), To: t0, AlarmNames: []string{"kv"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Transition{
		{Alarm: "kv", Time: t0.Add(-30 * time.Minute), From: StateInsufficientData, To: StateOK, Summary: "Alarm updated from INSUFFICIENT_DATA to OK"},
		{Alarm: "kv", Time: t0.Add(-10 * time.Minute), From: StateOK, To: StateAlarm, Summary: "Alarm updated from OK to ALARM"},
		{Alarm: "kv", Time: t0.Add(-5 * time.Minute), Summary: "Contributor updated", Contributor: map[string]string{"inference_component": "chat-llama"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("history:\n got %+v\nwant %+v", got, want)
	}
	if f.count("CloudWatch.DescribeAlarmHistory") != 3 {
		t.Errorf("%d DescribeAlarmHistory calls, want 3 (two pages of state updates, one of contributor updates)", f.count("CloudWatch.DescribeAlarmHistory"))
	}
}

func TestContributorsPages(t *testing.T) {
	f := newFake(t, testRegion)
	f.cw["DescribeAlarmContributors"] = func(in cbor.Map) reply {
		if cstr(in, "AlarmName") != "kv-by-ic" {
			t.Errorf("alarm name %q", cstr(in, "AlarmName"))
		}
		page := cstr(in, "NextToken")
		next := cbor.Value(cs("p2"))
		if page == "p2" {
			next = &cbor.Nil{}
		}
		return reply{body: cbor.Map{"AlarmContributors": cbor.List{cbor.Map{
			"ContributorId": cs("id-" + page), "ContributorAttributes": cbor.Map{"inference_component": cs("ic-" + page)},
			"StateReason": cs("above"), "StateTransitionedTimestamp": ctime(t0),
		}}, "NextToken": next}}
	}
	c, _ := newTestClient(t, f, options{})
	got, err := c.Contributors(context.Background(), "kv-by-ic")
	if err != nil {
		t.Fatal(err)
	}
	want := []Contributor{
		{ID: "id-", Attributes: map[string]string{"inference_component": "ic-"}, Reason: "above", Since: t0},
		{ID: "id-p2", Attributes: map[string]string{"inference_component": "ic-p2"}, Reason: "above", Since: t0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("contributors:\n got %+v\nwant %+v", got, want)
	}
}

// sageMakerFleet answers the five SageMaker operations for n endpoints (ep-00, ep-01, …)
// with one IC each, listing 3 per page; gone names an endpoint deleted after the listing.
// hold, when set, runs at the start of every Describe call.
func sageMakerFleet(t testing.TB, f *fakeAWS, n int, gone string, hold func()) {
	epoch := float64(t0.Unix())
	page := func(in map[string]any, key string, item func(i int) map[string]any) reply {
		start := 0
		if tok, _ := in["NextToken"].(string); tok != "" {
			fmt.Sscan(tok, &start)
		}
		var items []map[string]any
		for i := start; i < min(start+3, n); i++ {
			items = append(items, item(i))
		}
		out := map[string]any{key: items}
		if start+3 < n {
			out["NextToken"] = fmt.Sprint(start + 3)
		}
		return reply{body: out}
	}
	describe := func(name string, answer map[string]any) reply {
		if hold != nil {
			hold()
		}
		if name == gone {
			return smError(400, "ValidationException", "Could not find endpoint \""+name+"\".")
		}
		return reply{body: answer}
	}
	f.sm["ListEndpoints"] = func(in map[string]any) reply {
		return page(in, "Endpoints", func(i int) map[string]any {
			return map[string]any{"EndpointName": fmt.Sprintf("ep-%02d", i), "EndpointArn": "arn", "EndpointStatus": "InService", "CreationTime": epoch, "LastModifiedTime": epoch}
		})
	}
	f.sm["ListInferenceComponents"] = func(in map[string]any) reply {
		return page(in, "InferenceComponents", func(i int) map[string]any {
			return map[string]any{"InferenceComponentName": fmt.Sprintf("ic-%02d", i), "InferenceComponentArn": "arn-ic", "EndpointName": fmt.Sprintf("ep-%02d", i),
				"EndpointArn": "arn", "VariantName": "AllTraffic", "InferenceComponentStatus": "InService", "CreationTime": epoch, "LastModifiedTime": epoch}
		})
	}
	// Endpoints' tags come in two pages (hostile values); the ICs have none.
	f.sm["ListTags"] = func(in map[string]any) reply {
		if in["ResourceArn"] != "arn" {
			return reply{body: map[string]any{"Tags": []map[string]any{}}}
		}
		if in["NextToken"] == nil {
			return reply{body: map[string]any{"Tags": []map[string]any{{"Key": "Team", "Value": `search.ranking "ü" $x`}}, "NextToken": "2"}}
		}
		return reply{body: map[string]any{"Tags": []map[string]any{{"Key": "Cost Center", "Value": "42"}}}}
	}
	f.sm["DescribeEndpoint"] = func(in map[string]any) reply {
		name, _ := in["EndpointName"].(string)
		return describe(name, map[string]any{"EndpointName": name, "EndpointArn": "arn", "EndpointConfigName": name + "-cfg", "EndpointStatus": "InService",
			"CreationTime": epoch, "LastModifiedTime": epoch + 60,
			"ProductionVariants": []map[string]any{{"VariantName": "AllTraffic", "CurrentInstanceCount": 2, "DesiredInstanceCount": 3}}})
	}
	f.sm["DescribeEndpointConfig"] = func(in map[string]any) reply {
		name, _ := in["EndpointConfigName"].(string)
		return describe(name, map[string]any{"EndpointConfigName": name, "EndpointConfigArn": "arn-cfg", "CreationTime": epoch,
			"ProductionVariants": []map[string]any{{"VariantName": "AllTraffic", "InstanceType": "ml.g5.12xlarge", "InitialInstanceCount": 1}}})
	}
	f.sm["DescribeInferenceComponent"] = func(in map[string]any) reply {
		name, _ := in["InferenceComponentName"].(string)
		return describe(name, map[string]any{"InferenceComponentName": name, "InferenceComponentArn": "arn-ic", "EndpointName": "ep-" + strings.TrimPrefix(name, "ic-"),
			"EndpointArn": "arn", "VariantName": "AllTraffic", "InferenceComponentStatus": "InService", "CreationTime": epoch, "LastModifiedTime": epoch + 120,
			"Specification": map[string]any{"ModelName": "llama-" + name}, "RuntimeConfig": map[string]any{"CurrentCopyCount": 1, "DesiredCopyCount": 2}})
	}
}

// TestInventoryPagesAndDescribesInParallel: the listing is paged, and the Describe calls
// run describeLimit at once (that each runs no more than its limit is TestEachRunsLimitAtOnce's).
func TestInventoryPagesAndDescribesInParallel(t *testing.T) {
	f := newFake(t, testRegion)
	// The first describeLimit Describe calls wait for each other: Inventory returns only if
	// it has that many in flight at once.
	var entered atomic.Int32
	full := make(chan struct{})
	sageMakerFleet(t, f, 8, "ep-03", func() {
		if entered.Add(1) == describeLimit {
			close(full)
		}
		select {
		case <-full:
		case <-time.After(10 * time.Second):
			t.Errorf("%d Describe calls in flight at once after 10 s, want %d", entered.Load(), describeLimit)
		}
	})
	c, _ := newTestClient(t, f, options{})

	inv, err := c.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if inv.Region != testRegion || len(inv.Endpoints) != 7 {
		t.Fatalf("region %q, %d endpoints, want %s and 7 (ep-03 was deleted meanwhile)", inv.Region, len(inv.Endpoints), testRegion)
	}
	for i, e := range inv.Endpoints {
		if e.Name == "ep-03" || (i > 0 && inv.Endpoints[i-1].Name >= e.Name) {
			t.Errorf("endpoints not sorted or the deleted one kept: %v", e.Name)
		}
	}
	want := Endpoint{
		Name: "ep-05", ARN: "arn", Status: "InService", ConfigName: "ep-05-cfg", Created: t0, Modified: t0.Add(time.Minute),
		Tags:     map[string]string{"Team": `search.ranking "ü" $x`, "Cost Center": "42"},
		Variants: []Variant{{Name: "AllTraffic", InstanceType: "ml.g5.12xlarge", CurrentInstances: 2, DesiredInstances: 3}},
		Components: []Component{{Name: "ic-05", ARN: "arn-ic", Endpoint: "ep-05", Variant: "AllTraffic", Status: "InService", Model: "llama-ic-05",
			CurrentCopies: 1, DesiredCopies: 2, Created: t0, Modified: t0.Add(2 * time.Minute)}},
	}
	if got := inv.Endpoints[4]; !reflect.DeepEqual(got, want) {
		t.Errorf("ep-05:\n got %+v\nwant %+v", got, want)
	}
	if got := f.count("SageMaker.ListEndpoints"); got != 3 {
		t.Errorf("%d ListEndpoints pages, want 3", got)
	}
}

func TestRetriesThrottlingThenSucceeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    reply
		service string
	}{
		{name: "CloudWatch Throttling", fail: cwError(400, "ThrottlingException", "Throttling", "Rate exceeded"), service: "CloudWatch"},
		{name: "CloudWatch 503", fail: reply{status: 503, raw: []byte{}}, service: "CloudWatch"},
		{name: "SageMaker ThrottlingException", fail: smError(400, "ThrottlingException", "Rate exceeded"), service: "SageMaker"},
		{name: "SageMaker 429", fail: reply{status: 429, raw: []byte("{}")}, service: "SageMaker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, testRegion)
			var calls atomic.Int32
			f.cw["DescribeAlarms"] = func(cbor.Map) reply {
				if calls.Add(1) < 3 {
					return tc.fail
				}
				return reply{body: cbor.Map{"MetricAlarms": cbor.List{cbor.Map{"AlarmName": cs("a"), "StateValue": cs("OK")}}}}
			}
			f.sm["ListEndpoints"] = func(map[string]any) reply {
				if calls.Add(1) < 3 {
					return tc.fail
				}
				return reply{body: map[string]any{"Endpoints": []any{}}}
			}
			f.sm["ListInferenceComponents"] = func(map[string]any) reply { return reply{body: map[string]any{}} }
			c, _ := newTestClient(t, f, options{})
			var err error
			if tc.service == "CloudWatch" {
				var got []Alarm
				got, err = c.Alarms(context.Background(), AlarmQuery{})
				if err == nil && len(got) != 1 {
					t.Errorf("got %d alarms after the retries, want 1", len(got))
				}
			} else {
				_, err = c.Inventory(context.Background())
			}
			if err != nil {
				t.Fatalf("failed although the third attempt succeeds: %v", err)
			}
			if calls.Load() != 3 {
				t.Errorf("%d attempts, want 3", calls.Load())
			}
		})
	}
}

// opCalls invokes each operation of the API, naming the IAM action it needs.
var opCalls = []struct {
	action string
	call   func(*client) error
}{
	{ActionDescribeAlarms, func(c *client) error { _, err := c.Alarms(context.Background(), AlarmQuery{}); return err }},
	{ActionDescribeAlarmHistory, func(c *client) error {
		_, err := c.History(context.Background(), HistoryQuery{From: t0.Add(-time.Hour), To: t0})
		return err
	}},
	{ActionDescribeAlarmContributors, func(c *client) error { _, err := c.Contributors(context.Background(), "a"); return err }},
	{ActionListEndpoints, inventory},
	{ActionDescribeEndpoint, inventory},
	{ActionDescribeEndpointConfig, inventory},
	{ActionListInferenceComponents, components},
	{ActionDescribeInferenceComponent, components},
	{ActionListTags, tags},
	{ActionDescribeAlarms, func(c *client) error { return c.ProbeAlarms(context.Background()) }},
	{ActionListEndpoints, func(c *client) error { return c.ProbeInventory(context.Background()) }},
}

func inventory(c *client) error { _, err := c.Inventory(context.Background()); return err }

// components is the inventory's ComponentsErr: without the IC permissions the inventory
// itself must succeed with every endpoint (the denyOne fleet has two) and their variants.
func components(c *client) error {
	inv, err := c.Inventory(context.Background())
	if err != nil {
		return fmt.Errorf("the whole inventory failed instead of leaving the ICs out: %v", err) // %v: not a PermissionError
	}
	for _, e := range inv.Endpoints {
		if len(e.Variants) != 1 || len(e.Components) != 0 {
			return fmt.Errorf("endpoint %s: %d variants and %d ICs, want 1 and none", e.Name, len(e.Variants), len(e.Components))
		}
	}
	if len(inv.Endpoints) != 2 {
		return fmt.Errorf("%d endpoints, want 2", len(inv.Endpoints))
	}
	return inv.ComponentsErr
}

// tags is the inventory's TagsErr: without ListTags the inventory must succeed with every
// endpoint and IC, untagged.
func tags(c *client) error {
	inv, err := c.Inventory(context.Background())
	if err != nil {
		return fmt.Errorf("the whole inventory failed instead of leaving the tags out: %v", err) // %v: not a PermissionError
	}
	for _, e := range inv.Endpoints {
		if len(e.Components) != 1 || e.Tags != nil || e.Components[0].Tags != nil {
			return fmt.Errorf("endpoint %s: %d ICs, tags %v, want 1 IC and no tags", e.Name, len(e.Components), e.Tags)
		}
	}
	if len(inv.Endpoints) != 2 {
		return fmt.Errorf("%d endpoints, want 2", len(inv.Endpoints))
	}
	return inv.TagsErr
}

// TestProbesMakeOneCallEach: Save & test's probes make exactly one request each, asking
// for one item, however many pages the region has.
func TestProbesMakeOneCallEach(t *testing.T) {
	f := newFake(t, testRegion)
	sageMakerFleet(t, f, 8, "", nil)
	var maxResults, maxRecords []any
	list := f.sm["ListEndpoints"]
	f.sm["ListEndpoints"] = func(in map[string]any) reply {
		maxResults = append(maxResults, in["MaxResults"])
		return list(in)
	}
	f.cw["DescribeAlarms"] = func(in cbor.Map) reply {
		maxRecords = append(maxRecords, in["MaxRecords"])
		return reply{body: cbor.Map{"MetricAlarms": cbor.List{cbor.Map{"AlarmName": cs("a"), "StateValue": cs("OK")}}, "NextToken": cs("more")}}
	}
	c, _ := newTestClient(t, f, options{})
	api := Cached(c, time.Minute, nil)
	for range 2 { // uncached: each Save & test asks again
		if err := api.ProbeAlarms(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := api.ProbeInventory(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	calls := slices.Clone(f.calls)
	f.mu.Unlock()
	slices.Sort(calls)
	if want := []string{"CloudWatch.DescribeAlarms", "CloudWatch.DescribeAlarms", "SageMaker.ListEndpoints", "SageMaker.ListEndpoints"}; !slices.Equal(calls, want) {
		t.Errorf("requests %v, want %v", calls, want)
	}
	if want := []any{cbor.Uint(1), cbor.Uint(1)}; !reflect.DeepEqual(maxRecords, want) {
		t.Errorf("DescribeAlarms MaxRecords %v, want %v", maxRecords, want)
	}
	if want := []any{1.0, 1.0}; !reflect.DeepEqual(maxResults, want) {
		t.Errorf("ListEndpoints MaxResults %v, want %v", maxResults, want)
	}
}

// denyOne answers every operation, refusing the one of action with fail.
func denyOne(t testing.TB, f *fakeAWS, action string, cwFail, smFail reply) {
	sageMakerFleet(t, f, 2, "", nil)
	empty := reply{body: cbor.Map{}}
	for _, op := range []string{"DescribeAlarms", "DescribeAlarmHistory", "DescribeAlarmContributors"} {
		f.cw[op] = func(cbor.Map) reply {
			if "cloudwatch:"+op == action {
				return cwFail
			}
			return empty
		}
	}
	for op, ok := range f.sm {
		f.sm[op] = func(in map[string]any) reply {
			if "sagemaker:"+op == action {
				return smFail
			}
			return ok(in)
		}
	}
}

func TestAccessDeniedNamesTheIAMAction(t *testing.T) {
	for _, denial := range []struct {
		name               string
		cw, sm             reply
		cwStatus, smStatus int
		cwCode, smCode     string // CloudWatch reports its awsQuery-compatible code
	}{
		{name: "AccessDenied codes", cw: cwError(403, "AccessDeniedException", "AccessDenied", "User: arn:aws:iam::123456789012:user/x is not authorized"),
			sm: smError(400, "AccessDeniedException", "User: arn:aws:iam::123456789012:user/x is not authorized"), cwStatus: 403, smStatus: 400, cwCode: "AccessDenied", smCode: "AccessDeniedException"},
		{name: "bare 403", cw: reply{status: 403, raw: []byte{}}, sm: reply{status: 403, raw: []byte("{}")}, cwStatus: 403, smStatus: 403},
	} {
		for _, op := range opCalls {
			t.Run(denial.name+"/"+op.action, func(t *testing.T) {
				f := newFake(t, testRegion)
				denyOne(t, f, op.action, denial.cw, denial.sm)
				c, _ := newTestClient(t, f, options{})
				err := op.call(c)
				var perm *PermissionError
				if !errors.As(err, &perm) || perm.Action != op.action {
					t.Fatalf("error %v, want a PermissionError for %s", err, op.action)
				}
				status, code := denial.smStatus, denial.smCode
				if strings.HasPrefix(op.action, "cloudwatch:") {
					status, code = denial.cwStatus, denial.cwCode
				}
				var e *Error
				if !errors.As(perm.Err, &e) || e.Action != op.action || e.Status != status || e.Code != code {
					t.Errorf("cause %#v, want an *Error of %s with HTTP %d and code %q", perm.Err, op.action, status, code)
				}
			})
		}
	}
}

// TestErrorsThatAreNotPermissions: each answer is an *Error with AWS's status, code and
// words; its message names the fix for its kind (fix), and never a secret.
func TestErrorsThatAreNotPermissions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rep        reply
		status     int
		code, msg  string
		unreadable bool // the body is no AWS error
		fix        string
		throttle   bool
		auth       bool
	}{
		{name: "signature refused", rep: cwError(403, "InvalidSignatureException", "", "Signature expired"), status: 403, code: "InvalidSignatureException",
			msg: "Signature expired", fix: "check the access and secret key", auth: true},
		{name: "unknown key", rep: cwError(403, "UnrecognizedClientException", "", "The security token included in the request is invalid"), status: 403,
			code: "UnrecognizedClientException", msg: "The security token included in the request is invalid", fix: "check the access and secret key", auth: true},
		{name: "throttled on every attempt", rep: cwError(400, "ThrottlingException", "Throttling", "Rate exceeded"), status: 400, code: "Throttling",
			msg: "Rate exceeded", fix: "refresh dashboards less often", throttle: true},
		{name: "validation", rep: cwError(400, "InvalidParameterValueException", "InvalidParameterValue", "bad prefix"), status: 400, code: "InvalidParameterValue", msg: "bad prefix"},
		{name: "server error", rep: reply{status: 500, raw: []byte{}}, status: 500, unreadable: true, fix: "try again later"},
		{name: "403 page of a proxy", rep: reply{status: 403, raw: []byte("<html>blocked by policy</html>")}, status: 403, unreadable: true,
			fix: "check the credentials, the default region and that the endpoint is AWS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, testRegion)
			f.cw["DescribeAlarms"] = func(cbor.Map) reply { return tc.rep }
			c, _ := newTestClient(t, f, options{})
			_, err := c.Alarms(context.Background(), AlarmQuery{})
			var e *Error
			if !errors.As(err, &e) || IsPermission(err) {
				t.Fatalf("error %v (%T), want *Error and no PermissionError", err, err)
			}
			var deser *smithy.DeserializationError
			if e.Action != ActionDescribeAlarms || e.Status != tc.status || e.Code != tc.code || errors.As(err, &deser) != tc.unreadable ||
				(!tc.unreadable && e.Message != tc.msg) {
				t.Errorf("got %s HTTP %d code %q message %q (unreadable %v), want %s HTTP %d code %q message %q (unreadable %v)",
					e.Action, e.Status, e.Code, e.Message, errors.As(err, &deser), ActionDescribeAlarms, tc.status, tc.code, tc.msg, tc.unreadable)
			}
			if tc.fix != "" && !strings.Contains(err.Error(), tc.fix) {
				t.Errorf("message %q does not name the fix %q", err, tc.fix)
			}
			if e.Throttled() != tc.throttle || e.AuthFailed() != tc.auth {
				t.Errorf("throttled %v auth %v, want %v %v", e.Throttled(), e.AuthFailed(), tc.throttle, tc.auth)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), testToken) {
				t.Errorf("message leaks a secret: %q", err)
			}
		})
	}
}

// TestPerCallTimeout: a call AWS does not answer ends at the per-call timeout.
func TestPerCallTimeout(t *testing.T) {
	f := newFake(t, testRegion)
	unanswered := make(chan struct{})
	f.sm["ListEndpoints"] = func(map[string]any) reply { <-unanswered; return reply{body: map[string]any{}} }
	c, _ := newTestClient(t, f, options{callTimeout: 20 * time.Millisecond})
	t.Cleanup(func() { close(unanswered) }) // before the server's Close, which waits for its handlers
	_, err := c.Inventory(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(fmt.Sprint(err), ActionListEndpoints) {
		t.Errorf("error %v, want a deadline naming %s", err, ActionListEndpoints)
	}
}

// BenchmarkInventoryFanOut: 12 endpoints with an IC each on the loopback fake, each
// Describe taking ~2 ms as a remote call would; one call at a time is the baseline the
// bounded fan-out is measured against (speedup = sequential time / fan-out time).
func BenchmarkInventoryFanOut(b *testing.B) {
	clients := map[int]*client{}
	for _, limit := range []int{1, describeLimit} {
		f := newFake(b, testRegion)
		sageMakerFleet(b, f, 12, "", func() { time.Sleep(2 * time.Millisecond) })
		clients[limit], _ = newTestClient(b, f, options{describeLimit: limit})
	}
	var spent [2]time.Duration
	for b.Loop() {
		for i, limit := range []int{1, describeLimit} {
			start := time.Now()
			if _, err := clients[limit].Inventory(context.Background()); err != nil {
				b.Fatal(err)
			}
			spent[i] += time.Since(start)
		}
	}
	b.ReportMetric(float64(spent[0])/float64(spent[1]), "speedup")
}

// TestHistoryBeyondThePageBoundKeepsTheLatest: a busy account's history over a long range has
// more pages than the bound. The alarmHistory annotations then show the newest transitions
// (the plugin keeps the latest rows and says so) instead of failing: pages are asked newest
// first and what was read is kept.
func TestHistoryBeyondThePageBoundKeepsTheLatest(t *testing.T) {
	f := newFake(t, testRegion)
	var pages atomic.Int32
	f.cw["DescribeAlarmHistory"] = func(in cbor.Map) reply {
		if cstr(in, "ScanBy") != "TimestampDescending" {
			t.Errorf("ScanBy %q, want TimestampDescending (newest first)", cstr(in, "ScanBy"))
		}
		if cstr(in, "HistoryItemType") != "StateUpdate" {
			return reply{body: cbor.Map{"AlarmHistoryItems": cbor.List{}}}
		}
		n := pages.Add(1)
		return reply{body: cbor.Map{"AlarmHistoryItems": cbor.List{cbor.Map{
			"AlarmName": cs("kv"), "Timestamp": ctime(t0.Add(-time.Duration(n) * time.Minute)), "HistoryItemType": cs("StateUpdate"),
			"HistorySummary": cs("Alarm updated from OK to ALARM"),
		}}, "NextToken": cs(fmt.Sprint("t", n))}}
	}
	c, _ := newTestClient(t, f, options{})
	got, err := c.History(context.Background(), HistoryQuery{From: t0.Add(-24 * time.Hour), To: t0})
	if err != nil {
		t.Fatalf("history beyond the page bound failed: %v", err)
	}
	if len(got) != maxPages || int(pages.Load()) != maxPages {
		t.Fatalf("%d transitions from %d pages, want the %d of the bound", len(got), pages.Load(), maxPages)
	}
	if newest := got[len(got)-1].Time; !newest.Equal(t0.Add(-time.Minute)) {
		t.Errorf("newest transition %v, want %v", newest, t0.Add(-time.Minute))
	}
}
