// Package dstest sets up the rig's end-to-end tests: emulator stacks closed when the test
// ends, and the plugin's data source built the way Grafana does, from jsonData and decrypted
// secureJsonData, with the production clients (real promclient, SigV4 and AWS API clients),
// disposed when the test ends.
package dstest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// New is a data source with uid and these settings; jsonData is anything that marshals to
// the settings object (a stack's DataSourceSettings map, or a test's own).
func New(t testing.TB, uid string, jsonData any, secure map[string]string) *plugin.Datasource {
	t.Helper()
	jd, err := json.Marshal(jsonData)
	if err != nil {
		t.Fatalf("encoding the data source's jsonData: %v", err)
	}
	d, err := plugin.New(context.Background(), backend.DataSourceInstanceSettings{UID: uid, JSONData: jd, DecryptedSecureJSONData: secure}, plugin.NewClient)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Dispose)
	return d
}

// Stack serves o for a test with 3 h of history ending at stack.PinnedEnd (the simulated
// load follows the hour of day), closed when the test ends; skipped with -short.
func Stack(t testing.TB, o stack.Options) *stack.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: backfills a simulated fleet into a TSDB and serves the emulator")
	}
	o.History, o.End = 3*time.Hour, stack.PinnedEnd
	st, err := stack.Start(context.Background(), o)
	if err != nil {
		t.Fatalf("starting the emulator stack: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Regions serves several regions for a test, closed when the test ends; skipped with -short.
func Regions(t testing.TB, o stack.MultiOptions) *stack.Multi {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: backfills simulated regions and serves the emulator")
	}
	m, err := stack.StartRegions(context.Background(), o)
	if err != nil {
		t.Fatalf("starting the multi-region emulator: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}
