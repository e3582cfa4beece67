package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunRejectsBadUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage: release"},
		{[]string{"ship"}, "usage: release"},
		{[]string{"check", "--bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if code := run(tt.args, &out, &errOut); code != 2 {
			t.Errorf("run(%v) = %d, want 2", tt.args, code)
		}
		if !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("run(%v) stderr %q lacks %q", tt.args, errOut.String(), tt.want)
		}
	}
}

func TestRunReportsProblems(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"check", "--dist", t.TempDir()}, &out, &errOut); code != 1 {
		t.Fatalf("check of an empty dir = %d, want 1", code)
	}
	if !strings.Contains(errOut.String(), "plugin.json is missing") {
		t.Errorf("stderr %q does not name the missing plugin.json", errOut.String())
	}
}
