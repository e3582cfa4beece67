package plugin

import (
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// TestMergeFailures: the one wording of a query's failed regions.
func TestMergeFailures(t *testing.T) {
	fail := func(status backend.Status, msg string, frames ...*data.Frame) *backend.DataResponse {
		r := backend.ErrDataResponseWithSource(status, backend.ErrorSourceDownstream, msg)
		r.Frames = frames
		return &r
	}
	inspector := data.NewFrame("executed")
	ours := data.NewFrame("ours")
	tests := []struct {
		name       string
		named      bool
		parts      []regionPart[int]
		frames     data.Frames
		wantErr    string
		wantStatus backend.Status
		wantFrame  *data.Frame
	}{
		{"none failed", true, []regionPart[int]{{region: "a"}, {region: "b"}}, data.Frames{ours}, "", 0, ours},
		{"default region, unnamed", false, []regionPart[int]{{region: "us-east-1", failed: fail(403, "denied", inspector)}}, nil, "denied", 403, inspector},
		{"one of two named", true, []regionPart[int]{{region: "a"}, {region: "b", failed: fail(429, "throttled")}}, data.Frames{ours}, "region b: throttled", 429, ours},
		{"both named, first status", true, []regionPart[int]{{region: "a", failed: fail(502, "bad gateway")}, {region: "b", failed: fail(403, "denied")}}, nil, "region a: bad gateway; region b: denied", 502, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mergeFailures(tt.named, tt.parts, tt.frames)
			if (got.Error == nil) != (tt.wantErr == "") || (got.Error != nil && got.Error.Error() != tt.wantErr) {
				t.Errorf("error %v, want %q", got.Error, tt.wantErr)
			}
			if got.Status != tt.wantStatus {
				t.Errorf("status %d, want %d", got.Status, tt.wantStatus)
			}
			var first *data.Frame
			if len(got.Frames) > 0 {
				first = got.Frames[0]
			}
			if first != tt.wantFrame {
				t.Errorf("first frame %v, want %v", first, tt.wantFrame)
			}
		})
	}
}
