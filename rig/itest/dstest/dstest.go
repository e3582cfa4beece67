// Package dstest builds the plugin's data source the way Grafana does for the rig's tests:
// from jsonData and decrypted secureJsonData, with the production clients (real promclient,
// SigV4 and AWS API clients), disposed when the test ends.
package dstest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
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
