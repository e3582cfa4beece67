package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/health"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// Resource paths of the template variables that list the inventory, so endpoints without
// GPU metrics (and ICs not serving yet) appear too.
const (
	inventoryEndpoints  = "inventory/endpoints"
	inventoryComponents = "inventory/components" // ?endpoint=a,b narrows to those endpoints' ICs
)

// inventoryValues answers {"values": [...]}: the endpoint names, or the inference component
// names of the endpoints given, sorted and distinct.
func (d *Datasource) inventoryValues(ctx context.Context, req *backend.CallResourceRequest, path string) *backend.CallResourceResponse {
	if d.setupErr != nil {
		return errorResponseJSON(http.StatusBadRequest, "bad_data", d.setupErr.Error())
	}
	if req.Method != http.MethodGet {
		return errorResponseJSON(http.StatusMethodNotAllowed, "bad_data", "method "+req.Method+" is not allowed on "+path+": use GET")
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return errorResponseJSON(http.StatusBadRequest, "bad_data", "the request URL cannot be parsed: "+err.Error())
	}
	endpoints, err := models.ParseNames(u.Query().Get("endpoint"))
	if err != nil {
		return errorResponseJSON(http.StatusBadRequest, "bad_data", "parameter endpoint: "+err.Error())
	}
	if d.aws == nil {
		pr := d.explain(d.awsSetupErr, "")
		return errorResponseJSON(int(pr.Status), errorTypeFor(int(pr.Status)), pr.Message)
	}
	inv, err := d.aws.Inventory(ctx)
	if err == nil && path == inventoryComponents {
		// Endpoint names are complete without the IC permissions; IC names are not.
		err = inv.ComponentsErr
	}
	if err != nil {
		pr := d.explain(awsErr(err), "")
		return errorResponseJSON(int(pr.Status), errorTypeFor(int(pr.Status)), pr.Message)
	}
	f := health.Filter{Endpoints: endpoints}
	values := []string{}
	for _, ep := range inv.Endpoints {
		if !f.Keep(ep.Name, "") {
			continue
		}
		if path == inventoryEndpoints {
			values = append(values, ep.Name)
			continue
		}
		for _, c := range ep.Components {
			values = append(values, c.Name)
		}
	}
	slices.Sort(values)
	body, _ := json.Marshal(map[string][]string{"values": slices.Compact(values)})
	return jsonResponse(http.StatusOK, body)
}
