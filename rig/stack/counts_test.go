package stack

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

func TestCountsLogDiscoveryRequestsWithTheirStatus(t *testing.T) {
	var c counters
	h := c.count(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("over") != "" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		_, _ = w.Write([]byte("{}")) // an implicit 200
	}))
	start := time.Now()
	for _, path := range []string{
		"/api/v1/labels", "/api/v1/label/%40aws.region/values?over=1", "/api/v1/series",
		"/api/v1/query", "/api/v1/query_range", "/api/v1/label/x", // not discovery
	} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if path == "/api/v1/series" {
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261207/eu-west-1/aps/aws4_request, SignedHeaders=host, Signature=00")
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	got := c.discovery.since(start)
	var statuses []int
	var regions []string
	for _, r := range got {
		statuses = append(statuses, r.Status)
		regions = append(regions, r.Region)
	}
	if want := []int{200, 422, 200}; !slices.Equal(statuses, want) {
		t.Fatalf("statuses %v, want %v", statuses, want)
	}
	if want := []string{"", "", "eu-west-1"}; !slices.Equal(regions, want) {
		t.Errorf("regions %q, want %q (the credential scope's, empty without one)", regions, want)
	}
	if c.read().Received != 6 {
		t.Errorf("received %d, want 6", c.read().Received)
	}
	if n := len(c.discovery.since(time.Now().Add(time.Hour))); n != 0 {
		t.Errorf("%d requests logged in the future", n)
	}
}

func TestDiscoveryLogKeepsTheLatest(t *testing.T) {
	var l discoveryLog
	base := time.Unix(1_700_000_000, 0)
	for i := range discoveryLogSize + 10 {
		l.add(DiscoveryRequest{At: base.Add(time.Duration(i) * time.Millisecond), Status: 200})
	}
	all := l.since(base)
	if len(all) != discoveryLogSize {
		t.Fatalf("kept %d, want %d", len(all), discoveryLogSize)
	}
	if first := all[0].At.Sub(base); first != 10*time.Millisecond {
		t.Errorf("oldest kept at +%v, want +10ms", first)
	}
	for i := 1; i < len(all); i++ {
		if all[i].At.Before(all[i-1].At) {
			t.Fatalf("out of order at %d", i)
		}
	}
}
