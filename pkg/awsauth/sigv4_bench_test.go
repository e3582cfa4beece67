package awsauth

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

var benchForm = url.Values{"query": {`sum by ("@resource.host.id") (rate({"vllm:num_requests_running"}[5m]))`}, "start": {"1780660800"}, "end": {"1780664400"}, "step": {"60"}}.Encode()

func benchRequest(b *testing.B) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "https://monitoring.us-east-1.amazonaws.com/api/v1/query_range", strings.NewReader(benchForm))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

var noop = roundTripFunc(func(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
})

// BenchmarkRoundTripBaseline is the unsigned cost of building the request, the
// reference for BenchmarkRoundTripSigned.
func BenchmarkRoundTripBaseline(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := noop.RoundTrip(benchRequest(b)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRoundTripSigned(b *testing.B) {
	rt := NewSigner(noop, staticCreds(testKey, testSecret, testToken), testRegion, SigningService, fixedClock(testNow))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rt.RoundTrip(benchRequest(b)); err != nil {
			b.Fatal(err)
		}
	}
}
