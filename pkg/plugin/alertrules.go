package plugin

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/http"
	"net/url"
	"regexp"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
)

// alertRulesResource serves the alert rules (dashboards/builder's, generated into
// alertrules/ by dashboards/cmd/gen) for this data source's uid, so a user of the release
// zip installs them without Go or a checkout: ?format=api is the JSON the config page's
// "Install alert rules" sends to Grafana's alerting provisioning API, ?format=file (the
// default) the provisioning file to download.
const alertRulesResource = "alert-rules"

var (
	//go:embed alertrules/inferscope-rules.yaml
	alertRulesFile []byte
	//go:embed alertrules/inferscope-rules.json
	alertRulesAPI []byte
)

// grafanaUID is what Grafana accepts as a uid; the rules are YAML and JSON text, so the uid
// put into them must need no quoting.
var grafanaUID = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)

func alertRules(req *backend.CallResourceRequest) *backend.CallResourceResponse {
	if req.Method != http.MethodGet {
		return errorResponseJSON(http.StatusMethodNotAllowed, "bad_data",
			fmt.Sprintf("method %s is not allowed on %s: use GET", req.Method, alertRulesResource))
	}
	var uid string
	if s := req.PluginContext.DataSourceInstanceSettings; s != nil {
		uid = s.UID
	}
	if !grafanaUID.MatchString(uid) {
		return errorResponseJSON(http.StatusBadRequest, "bad_data",
			fmt.Sprintf("this data source's uid %q cannot be written into alert rules: give it a uid of 1 to 40 letters, digits, - or _", uid))
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return errorResponseJSON(http.StatusBadRequest, "bad_data", fmt.Sprintf("the request URL cannot be parsed: %v", err))
	}
	switch format := u.Query().Get("format"); format {
	case "api":
		return jsonResponse(http.StatusOK, bytes.ReplaceAll(alertRulesAPI, []byte(dashref.DatasourceUIDPlaceholder), []byte(uid)))
	case "", "file":
		return &backend.CallResourceResponse{
			Status: http.StatusOK,
			Headers: map[string][]string{
				"Content-Type":        {"application/yaml"},
				"Content-Disposition": {`attachment; filename="inferscope-rules.yaml"`},
			},
			Body: bytes.ReplaceAll(alertRulesFile, []byte(dashref.DatasourceUIDPlaceholder), []byte(uid)),
		}
	default:
		return errorResponseJSON(http.StatusBadRequest, "bad_data",
			fmt.Sprintf("format %q is not one of the alert rules' formats: use format=file (provisioning file) or format=api (alerting provisioning API)", format))
	}
}
