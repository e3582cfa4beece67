//go:build mage

// Build targets (`go tool mage -l` lists them). `go tool mage` builds the backend for every
// platform into dist/; the SDK's own targets (build:backend, build:linux, ...) come from the
// import below. Each target here runs the same command a developer would type.
package main

import (
	"os"

	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
	"github.com/magefile/mage/mg"
	"github.com/magefile/mage/sh"
)

// Default builds the backend binaries (gpx_inferscope_sagemaker_<os>_<arch>) for all platforms.
var Default = build.BuildAll

// Dashboards regenerates the dashboards' JSON into provisioning/ and the plugin bundle (src/).
func Dashboards() error {
	return sh.RunV("go", "run", "./dashboards/cmd/gen", "-out", "provisioning/dashboards", "-bundle", "src/dashboards")
}

// Emulator runs the CloudWatch PromQL emulator with a simulated fleet on 127.0.0.1:9090;
// SCENARIO picks the incident (default healthy).
func Emulator() error {
	scenario := os.Getenv("SCENARIO")
	if scenario == "" {
		scenario = "healthy"
	}
	return sh.RunV("go", "-C", "rig", "run", "./cmd/emulator", "--scenario", scenario)
}

// Demo runs the README's demo command (scripts/demo.sh); SCENARIO picks the incident.
func Demo() error {
	args := []string{}
	if s := os.Getenv("SCENARIO"); s != "" {
		args = append(args, s)
	}
	return sh.RunV("scripts/demo.sh", args...)
}

// CI runs the README's test command, everything CI runs (the SDK's `test` target runs only
// the Go tests under pkg/).
func CI() error {
	return sh.RunV("scripts/test.sh")
}

// Bench runs the benchmarks recorded in docs/benchmarks.md (several minutes).
func Bench() error {
	for _, b := range [][]string{ // module directory, package, benchmark, count
		{".", "./pkg/plugin", "BenchmarkMatrix", "3x"},
		{"rig", "./simulator", "Backfill", "1x"},
		{"rig", "./stack", "DashboardQueries", "5x"},
		{"rig", "./itest/diagnosis", "BenchmarkDiagnosis", "5x"},
		{"rig", "./emulator", "QueryOverhead", "10x"},
	} {
		if err := sh.RunV("go", "-C", b[0], "test", b[1], "-run", "^$", "-bench", b[2], "-benchtime", b[3], "-benchmem"); err != nil {
			return err
		}
	}
	return nil
}

// Fuzz runs every Go fuzz target for FUZZTIME (default 30s) each.
func Fuzz() error {
	t := os.Getenv("FUZZTIME")
	if t == "" {
		t = "30s"
	}
	return sh.RunWithV(map[string]string{"FUZZTIME": t}, "scripts/fuzz.sh")
}

// Package builds every platform and the frontend, then writes the release zip and
// checksums into build/.
func Package() error {
	// The frontend build empties dist/ first, so it runs before the backend builds.
	if err := sh.RunV("npm", "run", "build"); err != nil {
		return err
	}
	mg.Deps(build.BuildAll)
	return sh.RunV("go", "run", "./cmd/release", "package", "--dist", "dist", "--out", "build")
}
