package converter

import (
	"bytes"
	"testing"
	"time"
)

// FuzzRead feeds arbitrary bodies and legends. The converter must never panic, and any
// frames it returns must be well formed: equal-length fields, metadata on every frame and
// the executed query on the first.
func FuzzRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, legend string) {
		frames, err := read(bytes.NewReader(body), Options{Expr: "up", LegendFormat: legend, Step: 15 * time.Second})
		if err != nil {
			if frames != nil {
				t.Fatal("frames returned together with an error")
			}
			return
		}
		if len(frames) == 0 {
			t.Fatal("success without a frame")
		}
		if frames[0].Meta == nil || frames[0].Meta.ExecutedQueryString == "" {
			t.Fatal("first frame lacks the executed query")
		}
		for i, fr := range frames {
			if fr.Meta == nil {
				t.Fatalf("frame %d has no meta", i)
			}
			if _, err := fr.RowLen(); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
		}
	})
}
