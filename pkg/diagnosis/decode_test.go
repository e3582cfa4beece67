package diagnosis

import (
	"math"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	v, err := DecodeVector(strings.NewReader(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"aws.sagemaker.endpoint.name":"ep"},"value":[1780000000,"0.97"]},{"metric":{},"value":[1780000000,"NaN"]}]}}`))
	if err != nil || len(v) != 2 || label(v[0].Metric, lEP) != "ep" || float64(v[0].Value) != 0.97 || !math.IsNaN(float64(v[1].Value)) {
		t.Fatalf("vector: %v %v", v, err)
	}
	m, err := DecodeMatrix(strings.NewReader(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"b"},"values":[[1,"1"],[61,"2"]]}]}}`))
	if err != nil || len(m) != 1 || len(m[0].Values) != 2 || float64(m[0].Values[1].Value) != 2 {
		t.Fatalf("matrix: %v %v", m, err)
	}
	bad := []struct {
		name string
		body string
		want string
	}{
		{"error envelope in a 2xx", `{"status":"error","errorType":"bad_data","error":"Selector must have a metric name"}`, "bad_data: Selector must have a metric name"},
		{"aws error in a 2xx", `{"__type":"InvalidSignatureException","message":"Credential should be scoped to correct service"}`, "InvalidSignatureException: Credential should be scoped"},
		{"html", `<html>bad gateway</html>`, "not a JSON object"},
		{"wrong type", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, "matrix where a vector"},
		{"garbage result", `{"status":"success","data":{"resultType":"vector","result":{"x":1}}}`, "malformed"},
	}
	for _, c := range bad {
		if _, err := DecodeVector(strings.NewReader(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
