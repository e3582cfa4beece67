// Command alerts writes the alert rules (reading rules and SLO burn rates) as Grafana
// file provisioning.
//
//	go run ./dashboards/cmd/alerts -out provisioning/alerting
//
// -out         directory Grafana provisions alerting from (provisioning/alerting)
// -datasource  uid of the provisioned Inferscope data source the rules query
// -check       compare instead of write: exit 1 naming the stale file (for CI)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
)

func main() {
	out := flag.String("out", "provisioning/alerting", "directory for the alert rules provisioning file")
	ds := flag.String("datasource", builder.AlertDatasourceUID, "uid of the Inferscope data source the rules query")
	check := flag.Bool("check", false, "do not write; fail if the file on disk differs from the generated one")
	flag.Parse()
	if err := run(*out, *ds, *check); err != nil {
		fmt.Fprintln(os.Stderr, "alerts:", err)
		os.Exit(1)
	}
}

func run(out, datasource string, check bool) error {
	if out == "" {
		return fmt.Errorf("-out is empty; pass the provisioning directory, e.g. -out provisioning/alerting")
	}
	rules, err := builder.AlertRules(datasource)
	if err != nil {
		return err
	}
	path := filepath.Join(out, builder.AlertsFile)
	if check {
		have, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(have, rules) {
			return fmt.Errorf("out of date: %s; regenerate with go run ./dashboards/cmd/alerts", path)
		}
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	if err := os.WriteFile(path, rules, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
