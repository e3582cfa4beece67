package awsemu

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
	"github.com/prometheus/prometheus/promql"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
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
