package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// TestNetworkFaultsThroughTheDatasource: with the production client, a body cut off
// mid-way, an untrusted certificate and https to a plain-http port are downstream faults
// with advice, on panels and in Save & test, never a 500 with Go's raw text.
func TestNetworkFaultsThroughTheDatasource(t *testing.T) {
	var cutHits atomic.Int32
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cutHits.Add(1)
		body := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]`
		w.Header().Set("Content-Length", fmt.Sprint(len(body)+50))
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = conn.Close()
		}
	}))
	defer cut.Close()
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	defer untrusted.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()

	tests := []struct {
		name, endpoint, want string
	}{
		{"body cut off mid-way", cut.URL, "broke while the answer arrived"},
		{"untrusted certificate", untrusted.URL, "does not trust the TLS certificate"},
		{"https to a plain-http port", strings.Replace(plain.URL, "http://", "https://", 1), "did not answer with TLS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jd, _ := json.Marshal(map[string]string{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": tc.endpoint})
			d := newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{
				UID: "faults", JSONData: jd, DecryptedSecureJSONData: map[string]string{"accessKey": "AKIDFAULTS", "secretKey": "faults-secret-key"},
			})
			q := dataQuery("A", `{"expr":"up"}`)
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil {
				t.Fatal(err)
			}
			dr := resp.Responses["A"]
			if dr.Error == nil || dr.Status != backend.StatusBadGateway || dr.ErrorSource != backend.ErrorSourceDownstream || !strings.Contains(dr.Error.Error(), tc.want) {
				t.Errorf("query: %v (%d %s), want a 502 downstream error saying %q", dr.Error, dr.Status, dr.ErrorSource, tc.want)
			}
			h, _ := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			if h.Status != backend.HealthStatusError || !strings.Contains(h.Message, tc.want) {
				t.Errorf("health: %s, want it to say %q", h.Message, tc.want)
			}
		})
	}
	if n := cutHits.Load(); n < 2 {
		t.Errorf("the cut-off answer was requested %d times; it should have been retried", n)
	}
}
