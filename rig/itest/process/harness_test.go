package process_test

import (
	"context"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/rig/itest/gobuild"
	"github.com/inferscope/sagemaker-datasource/rig/pluginproc"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// buildPlugin compiles the plugin's main package into dir, with extra go build flags.
func buildPlugin(t testing.TB, dir string, flags ...string) string {
	return gobuild.Build(t, pluginproc.Package, dir, pluginproc.BinaryName, flags...)
}

// startPlugin launches bin as Grafana does; the process ends with the test, and its log is
// shown when the test failed.
func startPlugin(t testing.TB, bin string, env ...string) *pluginproc.Process {
	t.Helper()
	p, err := pluginproc.Start(bin, env...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			t.Logf("plugin process log:\n%s", p.Logs())
		}
	})
	return p
}

// startWithStack builds the plugin (with extra go build flags), starts an emulator stack with
// 30 minutes of history and the plugin, and returns them with the data source's context.
func startWithStack(ctx context.Context, t *testing.T, flags ...string) (*pluginproc.Process, *stack.Stack, backend.PluginContext) {
	t.Helper()
	bin := buildPlugin(t, t.TempDir(), flags...)
	st, err := stack.Start(ctx, stack.Options{History: 30 * time.Minute})
	if err != nil {
		t.Fatalf("starting the emulator stack: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return startPlugin(t, bin), st, pluginproc.Context(pluginproc.StackSettings(st, 1, "sagemaker"))
}
