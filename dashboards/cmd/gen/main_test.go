package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
)

func TestWriteThenCheck(t *testing.T) {
	out, bundle := filepath.Join(t.TempDir(), "prov"), filepath.Join(t.TempDir(), "bundle")
	if err := run(out, bundle, true); err == nil {
		t.Fatal("check passed on empty directories")
	}
	if err := run(out, bundle, false); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{out, bundle} {
		for _, f := range []string{"performance.json", "capacity.json", "reliability.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("not written: %v", err)
			}
		}
	}
	if err := run(out, bundle, true); err != nil {
		t.Fatalf("check after write: %v", err)
	}
	stale := filepath.Join(bundle, "capacity.json")
	if err := os.WriteFile(stale, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(out, bundle, true)
	if err == nil || !strings.Contains(err.Error(), stale) {
		t.Fatalf("check of an edited file: %v, want an error naming %s", err, stale)
	}
}

func TestEmptyOutIsAnError(t *testing.T) {
	err := run("", "", false)
	if err == nil || !strings.Contains(err.Error(), "-out") {
		t.Fatalf("got %v, want an error naming -out", err)
	}
}

func TestAlertsWriteThenCheck(t *testing.T) {
	out := filepath.Join(t.TempDir(), "alerting")
	if err := runAlerts(out, builder.AlertDatasourceUID, builder.DefaultTagLabels, true); err == nil {
		t.Fatal("check passed on an empty directory")
	}
	if err := runAlerts(out, builder.AlertDatasourceUID, builder.DefaultTagLabels, false); err != nil {
		t.Fatal(err)
	}
	if err := runAlerts(out, builder.AlertDatasourceUID, builder.DefaultTagLabels, true); err != nil {
		t.Fatalf("check after write: %v", err)
	}
	// Another data source is another file: the check names it stale.
	err := runAlerts(out, "inferscope-aws", builder.DefaultTagLabels, true)
	path := filepath.Join(out, builder.AlertsFile)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("check with another data source: %v, want an error naming %s", err, path)
	}
	// Other tag labels are another file too.
	if err := runAlerts(out, builder.AlertDatasourceUID, []builder.TagLabel{{Label: "owner", Key: "Owner"}}, true); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("check with other tag labels: %v, want an error naming %s", err, path)
	}
	if err := os.WriteFile(path, []byte("apiVersion: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runAlerts(out, builder.AlertDatasourceUID, builder.DefaultTagLabels, true); err == nil {
		t.Fatal("check passed on an edited file")
	}
}

func TestAlertsNeedADataSource(t *testing.T) {
	if err := runAlerts(t.TempDir(), "", builder.DefaultTagLabels, false); err == nil || !strings.Contains(err.Error(), "data source uid") {
		t.Fatalf("got %v, want an error naming the data source uid", err)
	}
}

func TestPluginRulesWriteThenCheck(t *testing.T) {
	dir := t.TempDir()
	if err := runPluginRules(dir, true); err == nil {
		t.Fatal("check passed on an empty directory")
	}
	if err := runPluginRules(dir, false); err != nil {
		t.Fatal(err)
	}
	for _, f := range []builder.RuleFormat{builder.FormatFile, builder.FormatAPI} {
		b, err := os.ReadFile(filepath.Join(dir, builder.PluginRulesFile(f)))
		if err != nil || !strings.Contains(string(b), dashref.DatasourceUIDPlaceholder) {
			t.Errorf("%s: %v; want the rules for the plugin's token uid", f, err)
		}
	}
	if err := runPluginRules(dir, true); err != nil {
		t.Fatalf("check after write: %v", err)
	}
}
