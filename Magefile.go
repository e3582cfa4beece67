//go:build mage

// Build targets: `mage` (or `go run github.com/magefile/mage`) builds the backend for every
// platform into dist/. Add further targets in their own Magefile_*.go files with the same
// build tag; mage merges them.
package main

import (
	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
)

// Default builds the backend binaries (gpx_inferscope_sagemaker_<os>_<arch>) for all platforms.
var Default = build.BuildAll
