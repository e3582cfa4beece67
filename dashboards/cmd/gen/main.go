// Command gen writes the Performance, Capacity and Reliability dashboards as JSON and the
// alert rules as Grafana alerting provisioning.
//
//	go run ./dashboards/cmd/gen -out provisioning/dashboards -bundle src/dashboards
//
// -out        directory Grafana provisions from (file provider; see dashboards.yaml there)
// -bundle     directory whose copies ship inside the plugin (plugin.json includes
//
//	dashboards/<name>.json); empty skips it
//
// -alerts     directory Grafana provisions alert rules from; empty skips them
// -datasource uid of the provisioned Inferscope data source the alert rules query
// -plugin-rules directory of the rules the plugin serves (both formats, for any data source's
//
//	uid); empty skips them
//
// -alert-tags  resource tags the alert rules copy as labels, label=TagKey joined by ","
//
//	(default team=Team: team from "@aws.tag.Team"; "" copies none)
//
// -check      compare instead of write: exit 1 listing the files that differ (for CI)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
)

func main() {
	out := flag.String("out", "provisioning/dashboards", "directory for the provisioned dashboard JSON")
	bundle := flag.String("bundle", "src/dashboards", "directory for the copies bundled with the plugin (empty: skip)")
	alerts := flag.String("alerts", "provisioning/alerting", "directory for the alert rules provisioning file (empty: skip)")
	ds := flag.String("datasource", builder.AlertDatasourceUID, "uid of the Inferscope data source the alert rules query")
	pluginRules := flag.String("plugin-rules", builder.PluginRulesDir, "directory of the alert rules the plugin serves (empty: skip)")
	alertTags := flag.String("alert-tags", "team=Team", `resource tags the alert rules copy as labels: label=TagKey pairs joined by ","; "" copies none`)
	check := flag.Bool("check", false, "do not write; fail if the files on disk differ from the generated ones")
	flag.Parse()
	tags, err := builder.ParseTagLabels(*alertTags)
	if err == nil {
		err = run(*out, *bundle, *check)
	}
	if err == nil && *alerts != "" {
		err = runAlerts(*alerts, *ds, tags, *check)
	}
	if err == nil && *pluginRules != "" {
		err = runPluginRules(*pluginRules, *check)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, bundle string, check bool) error {
	if out == "" {
		return fmt.Errorf("-out is empty; pass the provisioning directory, e.g. -out provisioning/dashboards")
	}
	dashboards, err := builder.All()
	if err != nil {
		return err
	}
	dirs := []string{out}
	if bundle != "" {
		dirs = append(dirs, bundle)
	}
	var stale []string
	for _, dir := range dirs {
		for _, d := range dashboards {
			path := filepath.Join(dir, d.File)
			same, err := sync(path, d.JSON, check)
			if err != nil {
				return err
			}
			if !same {
				stale = append(stale, path)
			}
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("out of date: %v; regenerate with go run ./dashboards/cmd/gen", stale)
	}
	return nil
}

// runAlerts writes (or checks) the alert rules for data source uid ds into dir.
func runAlerts(dir, ds string, tags []builder.TagLabel, check bool) error {
	return writeRules(filepath.Join(dir, builder.AlertsFile), builder.FormatFile, ds, tags, check)
}

// runPluginRules writes (or checks) the copies the plugin serves, in both formats, for the
// token the plugin replaces with its data source's uid, with the default tag labels (the
// plugin installs these; other tags take a provisioned file).
func runPluginRules(dir string, check bool) error {
	for _, f := range []builder.RuleFormat{builder.FormatFile, builder.FormatAPI} {
		if err := writeRules(filepath.Join(dir, builder.PluginRulesFile(f)), f, dashref.DatasourceUIDPlaceholder, builder.DefaultTagLabels, check); err != nil {
			return err
		}
	}
	return nil
}

func writeRules(path string, format builder.RuleFormat, ds string, tags []builder.TagLabel, check bool) error {
	rules, err := builder.RenderAlertRulesWith(format, ds, tags)
	if err != nil {
		return err
	}
	same, err := sync(path, rules, check)
	if err == nil && !same {
		err = fmt.Errorf("out of date: %s; regenerate with go run ./dashboards/cmd/gen", path)
	}
	return err
}

// sync writes data to path, or with check only compares: same is false when the file on
// disk differs (or is missing).
func sync(path string, data []byte, check bool) (same bool, err error) {
	if check {
		have, err := os.ReadFile(path)
		return err == nil && bytes.Equal(have, data), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
