// Command gen writes the Performance, Capacity and Reliability dashboards as JSON.
//
//	go run ./dashboards/cmd/gen -out provisioning/dashboards -bundle src/dashboards
//
// -out    directory Grafana provisions from (file provider; see dashboards.yaml there)
// -bundle directory whose copies ship inside the plugin (plugin.json includes
//
//	dashboards/<name>.json); empty skips it
//
// -check  compare instead of write: exit 1 listing the files that differ (for CI)
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
	out := flag.String("out", "provisioning/dashboards", "directory for the provisioned dashboard JSON")
	bundle := flag.String("bundle", "src/dashboards", "directory for the copies bundled with the plugin (empty: skip)")
	check := flag.Bool("check", false, "do not write; fail if the files on disk differ from the generated ones")
	flag.Parse()
	if err := run(*out, *bundle, *check); err != nil {
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
		if !check {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", dir, err)
			}
		}
		for _, d := range dashboards {
			path := filepath.Join(dir, d.File)
			if check {
				have, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(have, d.JSON) {
					stale = append(stale, path)
				}
				continue
			}
			if err := os.WriteFile(path, d.JSON, 0o644); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("out of date: %v; regenerate with go run ./dashboards/cmd/gen", stale)
	}
	return nil
}
