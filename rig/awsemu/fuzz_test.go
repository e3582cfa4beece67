package awsemu

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
	"github.com/prometheus/prometheus/promql"
	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

type emptyQuerier struct{}

func (emptyQuerier) QueryRange(_ context.Context, _ string, _, _ time.Time, _ time.Duration, f func(promql.Matrix) error) error {
	return f(nil)
}

// FuzzServe feeds arbitrary bodies to every operation: the answer is always a rendered
// response (2xx, or a 4xx naming the problem), never a panic or a 5xx.
func FuzzServe(f *testing.F) {
	s, err := New(Config{Fleet: fleet.Default(), Origin: origin, Head: func() time.Time { return origin.Add(10 * time.Minute) }})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(0, []byte{})
	f.Add(0, cbor.Encode(cbor.Map{"MaxRecords": cbor.Uint(5), "NextToken": cbor.String("x")}))
	f.Add(1, cbor.Encode(cbor.Map{"AlarmName": cbor.List{cbor.Uint(1)}}))
	f.Add(2, cbor.Encode(cbor.Map{"StartDate": &cbor.Tag{ID: 1, Value: cbor.String("now")}}))
	f.Add(3, []byte(`{"MaxResults": 3, "SortBy": "Name"}`))
	f.Add(4, []byte(`{"EndpointName": 7}`))
	f.Add(7, []byte(`[`))
	ops := append(append([]string{}, cloudWatchOps...), sageMakerOps...)
	f.Fuzz(func(t *testing.T, op int, body []byte) {
		if op < 0 {
			op = -op
		}
		name := ops[op%len(ops)]
		svc := svcSageMaker
		if op%len(ops) < len(cloudWatchOps) {
			svc = svcCloudWatch
		}
		resp := s.Serve(context.Background(), emulator.Call{Service: svc, Operation: name}, body, emptyQuerier{})
		if resp.Status >= http.StatusInternalServerError || resp.Status < http.StatusOK || len(resp.Body) == 0 {
			t.Fatalf("%s(%q): status %d body %q", name, body, resp.Status, resp.Body)
		}
	})
}

// FuzzLookupEvents feeds arbitrary LookupEvents bodies (unthrottled): the answer is a
// rendered 2xx or 4xx, a page holds at most 50 events, and each event's record reads as a
// change with pkg/changes.
func FuzzLookupEvents(f *testing.F) {
	at := origin.Add(5 * time.Minute)
	history := []simulator.Change{
		{ID: "e1", Time: at, Source: changes.SourceSageMaker, Event: "UpdateEndpoint", Who: "arn:aws:sts::123456789012:assumed-role/deployer/ci",
			Account: "123456789012", Region: "us-east-1", Endpoint: "summarize", Request: map[string]any{"endpointName": "summarize", "endpointConfigName": "summarize-config-v2"}},
		{ID: "e2", Time: at.Add(time.Minute), Source: changes.SourceSageMaker, Event: "UpdateInferenceComponent", Who: "arn:aws:sts::123456789012:assumed-role/deployer/ci",
			Account: "123456789012", Region: "us-east-1", Endpoint: "chat-ic", IC: "chat-llama-8b", Request: map[string]any{"inferenceComponentName": "chat-llama-8b"}},
	}
	s, err := New(Config{Fleet: fleet.Default(), Origin: origin, Head: func() time.Time { return origin.Add(10 * time.Minute) },
		Changes: func() []simulator.Change { return history }})
	if err != nil {
		f.Fatal(err)
	}
	s.lookups = rate.NewLimiter(rate.Inf, 0)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"MaxResults": 1}`))
	f.Add([]byte(`{"LookupAttributes": [{"AttributeKey": "ResourceName", "AttributeValue": "summarize"}], "StartTime": 0, "EndTime": 1e12}`))
	f.Add([]byte(`{"NextToken": "TG9va3VwRXZlbnRzOjE6MA"}`))
	f.Add([]byte(`{"MaxResults": -1, "StartTime": "x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := s.Serve(context.Background(), emulator.Call{Service: svcCloudTrail, Operation: "LookupEvents"}, body, emptyQuerier{})
		if resp.Status >= http.StatusInternalServerError || resp.Status < http.StatusOK || len(resp.Body) == 0 {
			t.Fatalf("LookupEvents(%q): status %d body %q", body, resp.Status, resp.Body)
		}
		if resp.Status != http.StatusOK {
			return
		}
		var out struct {
			Events []struct{ CloudTrailEvent string }
		}
		if err := json.Unmarshal(resp.Body, &out); err != nil || len(out.Events) > lookupPageLimit {
			t.Fatalf("LookupEvents(%q): %d events, %v", body, len(out.Events), err)
		}
		for _, e := range out.Events {
			if _, err := changes.Parse(e.CloudTrailEvent); err != nil {
				t.Fatalf("the emulator's record does not read as a change: %v\n%s", err, e.CloudTrailEvent)
			}
		}
	})
}
