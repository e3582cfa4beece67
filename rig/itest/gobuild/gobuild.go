// Package gobuild compiles a command of this checkout for tests that run it as a child
// process (the plugin binary, the diagnose CLI), the way a user or Grafana starts it.
package gobuild

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Build compiles the main package pkg (an import path; rig/go.mod replaces the root module
// with ../, so it is this checkout's code) into dir/name for the host platform, with extra
// go build flags (such as -tags). It keeps the test's environment, so the build cache of the
// test binary is reused.
func Build(t testing.TB, pkg, dir, name string, flags ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(goBin, append(append([]string{"build", "-o", bin}, flags...), pkg)...).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}
