package sigv4verify

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkVerify checks one signed dashboard-style query_range request; Verify restores the
// body for the handler, so the same request is verified again on every iteration.
func BenchmarkVerify(b *testing.B) {
	form := url.Values{"query": {`sum by ("@resource.host.id") (rate({"vllm:num_requests_running"}[5m]))`}, "start": {"1780660800"}, "end": {"1780664400"}, "step": {"60"}}.Encode()
	req, err := http.NewRequest(http.MethodPost, "https://monitoring.us-east-1.amazonaws.com/api/v1/query_range", strings.NewReader(form))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	signed := signViaWire(b, req, staticCreds(testKey, testSecret, ""))
	v := testVerifier()
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Verify(signed); err != nil {
			b.Fatal(err)
		}
	}
}
