package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The testdata/*.json streams are `go test -json -count=1 -timeout 2s` (go1.26) of tiny
// throwaway packages, one file per way a package can fail (parallel.json with -parallel 2:
// four t.Parallel subtests that sleep).
func TestSummarize(t *testing.T) {
	tests := []struct {
		name       string
		in         string // inline events, or
		file       string // a captured stream in testdata/
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
			name:       "a failing test's output is replayed and the package adds no failure",
			file:       "testfail.json",
			want:       counts{passed: 1, failed: 1},
			wantOut:    []string{"ok_test.go:4: want 1 got 2", "FAIL example.com/tsdemo/ok 0.0s\n"},
			notWantOut: []string{"--- PASS: TestOK"},
		},
		{
			name: "a timeout counts its package and names the test that hung",
			file: "timeout.json",
			want: counts{passed: 1, failed: 1, brokenPackages: []string{
				"example.com/tsdemo/slow (timed out in TestHang)"}},
			wantOut: []string{"FAIL example.com/tsdemo/slow 2.0s: timed out in TestHang",
				"panic: test timed out after 2s", "slow_test.go:4"},
		},
		{
			// TestPar/1 and /2 are paused (t.Parallel, -parallel 2) and were never running,
			// as Go's own "running tests:" block says.
			name: "a timeout among parallel subtests names only those running, not the paused",
			file: "parallel.json",
			want: counts{failed: 1, brokenPackages: []string{
				"example.com/tsdemo/par (timed out in TestPar/0, TestPar/3)"}},
			wantOut: []string{"FAIL example.com/tsdemo/par 2.0s: timed out in TestPar/0, TestPar/3\n"},
		},
		{
			name: "a package that does not compile counts and shows the compiler's error",
			file: "buildfail.json",
			want: counts{failed: 1, brokenPackages: []string{
				"example.com/tsdemo/broken (build failed)"}},
			wantOut: []string{"FAIL example.com/tsdemo/broken 0.0s: build failed",
				"broken_test.go:3:28: undefined: undefined"},
		},
		{
			name: "a vet finding fails the build",
			file: "vet.json",
			want: counts{failed: 1, brokenPackages: []string{
				"example.com/tsdep/vet (build failed)"}},
			wantOut: []string{`fmt.Printf format %d has arg "x" of wrong type string`},
		},
		{
			name: "a broken dependency fails each package that imports it, its error printed once",
			file: "shareddep.json",
			want: counts{failed: 3, brokenPackages: []string{
				"example.com/tsdep/a (build failed in example.com/tsdep/dep)",
				"example.com/tsdep/b (build failed in example.com/tsdep/dep)",
				"example.com/tsdep/dep (build failed)"}},
			wantOut: []string{"cannot use \"x\" (untyped string constant) as int value"},
		},
		{
			name: "a panic in TestMain fails the package outside any test",
			file: "testmainpanic.json",
			want: counts{failed: 1, brokenPackages: []string{
				"example.com/tsdemo/panicky (failed outside any test)"}},
			wantOut: []string{"panic: boom in TestMain"},
		},
		{
			name: "a panicking test is one failure, and its trace printed after its end is replayed",
			file: "testpanic.json",
			want: counts{passed: 1, failed: 1},
			wantOut: []string{"--- FAIL: TestPanics",
				"panic: assignment to entry in nil map", "pan.TestPanics("},
		},
		{
			name:    "os.Exit in a test is that test's failure",
			file:    "osexit.json",
			want:    counts{failed: 1},
			wantOut: []string{"unexpected call to os.Exit(0) during test"},
		},
		{
			name: "a test killed mid-run without a timeout is named as unfinished",
			in: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestA/sub"}
{"Action":"output","Package":"p","Test":"TestA/sub","Output":"signal: killed\n"}
{"Action":"fail","Package":"p","Elapsed":3}`,
			want:    counts{failed: 1, brokenPackages: []string{"p (exited during TestA/sub)"}},
			wantOut: []string{"FAIL p 3.0s: exited during TestA/sub", "signal: killed"},
		},
		{
			name:    "plain-text build errors of older go commands pass through",
			in:      "# p\n./x.go:1: syntax error\n" + `{"Action":"fail","Package":"p"}`,
			want:    counts{failed: 1, brokenPackages: []string{"p (failed outside any test)"}},
			wantOut: []string{"./x.go:1: syntax error", "FAIL p"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if tt.file != "" {
				b, err := os.ReadFile(filepath.Join("testdata", tt.file))
				if err != nil {
					t.Fatal(err)
				}
				in = string(b)
			}
			var out bytes.Buffer
			got, err := summarize(strings.NewReader(in), &out)
			if err != nil {
				t.Fatal(err)
			}
			if got.passed != tt.want.passed || got.failed != tt.want.failed || got.skipped != tt.want.skipped ||
				!slices.Equal(got.brokenPackages, tt.want.brokenPackages) {
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

// The closing line keeps the shape scripts/test.sh parses and names each broken package.
func TestLine(t *testing.T) {
	tests := []struct {
		c    counts
		want string
	}{
		{counts{passed: 3, skipped: 1}, "go tests: 3 passed, 0 failed, 1 skipped"},
		{counts{passed: 2542, failed: 1, brokenPackages: []string{"rig/itest/diagnosis (timed out in TestX)"}},
			"go tests: 2542 passed, 1 failed, 0 skipped; packages that failed as a whole: rig/itest/diagnosis (timed out in TestX)"},
	}
	for _, tt := range tests {
		if got := tt.c.line(); got != tt.want {
			t.Errorf("line() = %q, want %q", got, tt.want)
		}
	}
}
