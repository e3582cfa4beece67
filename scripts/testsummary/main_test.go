package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		want       counts
		wantOut    []string
		notWantOut []string
	}{
		{
			name: "passing and skipped tests stay quiet",
			in: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"noise\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"pass","Package":"p","Elapsed":0.5}`,
			want:       counts{passed: 1, skipped: 1},
			wantOut:    []string{"ok   p 0.5s"},
			notWantOut: []string{"noise"},
		},
		{
			name: "failing test output is replayed",
			in: `{"Action":"output","Package":"p","Test":"TestA","Output":"want 1 got 2\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"fail","Package":"p","Elapsed":1}`,
			want:    counts{failed: 1},
			wantOut: []string{"want 1 got 2", "FAIL p 1.0s"},
		},
		{
			name:    "plain build errors pass through",
			in:      "# p\n./x.go:1: syntax error\n" + `{"Action":"fail","Package":"p"}`,
			want:    counts{},
			wantOut: []string{"./x.go:1: syntax error", "FAIL p"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			got, err := summarize(strings.NewReader(tt.in), &out)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("counts = %+v, want %+v", got, tt.want)
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tt.notWantOut {
				if strings.Contains(out.String(), s) {
					t.Errorf("output has %q:\n%s", s, out.String())
				}
			}
		})
	}
}
