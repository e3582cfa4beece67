package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
)

func TestWriteThenCheck(t *testing.T) {
	out := filepath.Join(t.TempDir(), "alerting")
	if err := run(out, builder.AlertDatasourceUID, true); err == nil {
		t.Fatal("check passed on an empty directory")
	}
	if err := run(out, builder.AlertDatasourceUID, false); err != nil {
		t.Fatal(err)
	}
	if err := run(out, builder.AlertDatasourceUID, true); err != nil {
		t.Fatalf("check after write: %v", err)
	}
	// Another data source is another file: the check names it stale.
	err := run(out, "inferscope-aws", true)
	path := filepath.Join(out, builder.AlertsFile)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("check with another data source: %v, want an error naming %s", err, path)
	}
	if err := os.WriteFile(path, []byte("apiVersion: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(out, builder.AlertDatasourceUID, true); err == nil {
		t.Fatal("check passed on an edited file")
	}
}

func TestBadFlags(t *testing.T) {
	if err := run("", builder.AlertDatasourceUID, false); err == nil || !strings.Contains(err.Error(), "-out") {
		t.Fatalf("got %v, want an error naming -out", err)
	}
	if err := run(t.TempDir(), "", false); err == nil || !strings.Contains(err.Error(), "data source uid") {
		t.Fatalf("got %v, want an error naming the data source uid", err)
	}
}
