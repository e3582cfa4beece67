package goldentest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// recorder collects non-fatal failures so a test can assert that a check fails.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheckDataResponseRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		dr   backend.DataResponse
	}{
		{"frames", backend.DataResponse{Frames: data.Frames{data.NewFrame("A", data.NewField("v", nil, []float64{1, 2}))}}},
		{"error", backend.DataResponse{Error: errors.New("bad_data: boom"), ErrorSource: backend.ErrorSourceDownstream}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			CheckDataResponse(t, dir, tt.name, &tt.dr, true)
			CheckDataResponse(t, dir, tt.name, &tt.dr, false)
			raw, err := os.ReadFile(filepath.Join(dir, tt.name+".jsonc"))
			if err != nil {
				t.Fatal(err)
			}
			if hasHeader := strings.HasPrefix(string(raw), errorHeader); hasHeader != (tt.dr.Error != nil) {
				t.Fatalf("error header present = %v for a response with error %v:\n%s", hasHeader, tt.dr.Error, raw)
			}
		})
	}
}

func TestCheckErrorReportsADifference(t *testing.T) {
	dir := t.TempDir()
	written := backend.DataResponse{Error: errors.New("bad_data: boom"), ErrorSource: backend.ErrorSourceDownstream}
	checkError(t, dir, "e", &written, true)

	changed := backend.DataResponse{Error: errors.New("bad_data: other"), ErrorSource: backend.ErrorSourceDownstream}
	rec := &recorder{TB: t}
	checkError(rec, dir, "e", &changed, false)
	if len(rec.errs) == 0 {
		t.Fatal("a changed error message passed the golden check")
	}
	if !strings.Contains(strings.Join(rec.errs, "\n"), "e.jsonc differs") {
		t.Fatalf("failure does not name the golden file: %q", rec.errs)
	}
}
