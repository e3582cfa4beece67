package builder

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Generated is one dashboard ready to write: its file name and JSON.
type Generated struct {
	File string
	JSON []byte
}

// All builds the three dashboards in a fixed order, as indented JSON with a trailing newline
// (the bytes the committed files must equal).
func All() ([]Generated, error) {
	specs := []struct {
		file  string
		build func() *dashboard.DashboardBuilder
	}{
		{"performance.json", Performance},
		{"capacity.json", Capacity},
		{"reliability.json", Reliability},
	}
	out := make([]Generated, 0, len(specs))
	for _, s := range specs {
		d, err := s.build().Build()
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", s.file, err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		// Keep PromQL comparison operators readable in the JSON (no \u003e).
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("encode %s: %w", s.file, err)
		}
		out = append(out, Generated{File: s.file, JSON: buf.Bytes()})
	}
	return out, nil
}
