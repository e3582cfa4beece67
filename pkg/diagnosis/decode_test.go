package diagnosis

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

func TestDecode(t *testing.T) {
	v, err := DecodeVector(strings.NewReader(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"aws.sagemaker.endpoint.name":"ep"},"value":[1780000000,"0.97"]},{"metric":{},"value":[1780000000,"NaN"]}]}}`))
	if err != nil || len(v) != 2 || label(v[0].Metric, lEP) != "ep" || float64(v[0].Value) != 0.97 || v[0].Timestamp != 1780000000000 || !math.IsNaN(float64(v[1].Value)) {
		t.Fatalf("vector: %v %v", v, err)
	}
	m, err := DecodeMatrix(strings.NewReader(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"],[61,"2"]]}]}}`))
	if err != nil || len(m) != 1 || label(m[0].Metric, "a") != "b" || len(m[0].Values) != 2 || float64(m[0].Values[1].Value) != 2 || m[0].Values[1].Timestamp != 61000 {
		t.Fatalf("matrix: %v %v", m, err)
	}
	var (
		apiErr    *promclient.APIError
		malformed *promclient.MalformedError
	)
	bad := []struct {
		name  string
		body  string
		check func(error) bool
	}{
		{"error envelope in a 2xx", `{"status":"error","errorType":"bad_data","error":"Selector must have a metric name"}`,
			func(err error) bool { return errors.As(err, &apiErr) && apiErr.Type == "bad_data" }},
		{"aws error in a 2xx", `{"__type":"InvalidSignatureException","message":"Credential should be scoped to correct service"}`,
			func(err error) bool { return errors.As(err, &apiErr) && apiErr.Type == "InvalidSignatureException" }},
		{"html", `<html>bad gateway</html>`, func(err error) bool { return errors.As(err, &malformed) }},
		{"wrong type", `{"status":"success","data":{"resultType":"matrix","result":[]}}`,
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "matrix where a vector") }},
		{"garbage result", `{"status":"success","data":{"resultType":"vector","result":{"x":1}}}`, func(err error) bool { return errors.As(err, &malformed) }},
	}
	for _, c := range bad {
		if _, err := DecodeVector(strings.NewReader(c.body)); !c.check(err) {
			t.Errorf("%s: got %v (%T)", c.name, err, err)
		}
	}
}
