package emulator

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzServeHTTP: whatever the path, verb and parameters, the emulator answers with a
// JSON envelope and a request id, and never panics.
func FuzzServeHTTP(f *testing.F) {
	seeds := []struct{ method, target, body string }{
		{"GET", "/api/v1/query?query=1%2B1", ""},
		{"POST", "/api/v1/query_range", "query=%7B%22many.series%22%7D&start=0&end=600&step=1m"},
		{"GET", "/api/v1/label/%40resource.host.id/values?limit=2", ""},
		{"POST", "/api/v1/series", "match%5B%5D=%7B__name__%3D~%22.%2B%22%7D&start=a&end=b"},
		{"GET", "/api/v1/labels?match[]={&start=1e300", ""},
		{"PUT", "/api/v1/label/x/values", "x"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target, s.body)
	}
	db := openDB(f)
	seed(f, db)
	srv, err := New(Config{Limits: unthrottled()}, db)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, target, body string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n") || method == "" || strings.ContainsAny(method, " \r\n/") {
			return // not an HTTP request line
		}
		req, err := http.NewRequest(method, target, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		var env envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || (env.Status != "success" && env.Status != "error") {
			t.Fatalf("%s %s: status %d, body %q is not an envelope", method, target, rec.Code, rec.Body.String())
		}
		if (env.Status == "error") != (rec.Code != http.StatusOK) || rec.Header().Get("x-amzn-RequestId") == "" {
			t.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body.String())
		}
	})
}
