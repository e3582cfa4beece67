package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
)

func callAlertRules(t *testing.T, d *Datasource, method, uid, query string) *backend.CallResourceResponse {
	t.Helper()
	var got *backend.CallResourceResponse
	err := d.CallResource(context.Background(), &backend.CallResourceRequest{
		PluginContext: backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: uid}},
		Path:          alertRulesResource, Method: method,
		URL: "/api/datasources/uid/" + uid + "/resources/" + alertRulesResource + query,
	}, backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		got = r
		return nil
	}))
	if err != nil || got == nil {
		t.Fatalf("CallResource: %v, response %v", err, got)
	}
	return got
}

// The rules served are the generator's for this data source's uid, in either format.
func TestAlertRulesResourceServesTheRulesForThisDataSource(t *testing.T) {
	d := newTestDatasource(t, &fakeUpstream{})
	cases := []struct {
		query       string
		format      builder.RuleFormat
		contentType string
	}{
		{"?format=api", builder.FormatAPI, "application/json"},
		{"?format=file", builder.FormatFile, "application/yaml"},
		{"", builder.FormatFile, "application/yaml"},
	}
	for _, c := range cases {
		resp := callAlertRules(t, d, http.MethodGet, "my-ds_2", c.query)
		if resp.Status != http.StatusOK {
			t.Fatalf("%q: status %d: %s", c.query, resp.Status, resp.Body)
		}
		want, err := builder.RenderAlertRules(c.format, "my-ds_2")
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Body) != string(want) {
			t.Errorf("%q: the rules served are not the generator's for this uid (regenerate with go run ./dashboards/cmd/gen)", c.query)
		}
		if strings.Contains(string(resp.Body), dashref.DatasourceUIDPlaceholder) {
			t.Errorf("%q: the uid token is left in the rules", c.query)
		}
		if got := resp.Headers["Content-Type"]; len(got) != 1 || got[0] != c.contentType {
			t.Errorf("%q: content type %v, want %s", c.query, got, c.contentType)
		}
	}
	resp := callAlertRules(t, d, http.MethodGet, "my-ds_2", "?format=file")
	if got := resp.Headers["Content-Disposition"]; len(got) != 1 || !strings.Contains(got[0], `filename="`+builder.AlertsFile+`"`) {
		t.Errorf("file download named %v, want %s", got, builder.AlertsFile)
	}
}

func TestAlertRulesResourceRefusesBadRequests(t *testing.T) {
	d := newTestDatasource(t, &fakeUpstream{})
	cases := []struct {
		name, method, uid, query string
		status                   int
		names                    string // what the message must name
	}{
		{"unknown format", http.MethodGet, "my-ds", "?format=xml", http.StatusBadRequest, "format=api"},
		{"uid needing quotes", http.MethodGet, `my"ds`, "?format=api", http.StatusBadRequest, "uid"},
		{"no uid", http.MethodGet, "", "?format=api", http.StatusBadRequest, "uid"},
		{"POST", http.MethodPost, "my-ds", "?format=api", http.StatusMethodNotAllowed, "GET"},
	}
	for _, c := range cases {
		resp := callAlertRules(t, d, c.method, c.uid, c.query)
		var env struct{ Status, ErrorType, Error string }
		if err := json.Unmarshal(resp.Body, &env); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, resp.Body)
		}
		if resp.Status != c.status || env.Status != "error" || env.ErrorType != "bad_data" || !strings.Contains(env.Error, c.names) {
			t.Errorf("%s: status %d %+v, want %d bad_data naming %q", c.name, resp.Status, env, c.status, c.names)
		}
	}
}
