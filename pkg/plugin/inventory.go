package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/health"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// Resource paths of the template variables that list the inventory, so endpoints without
// GPU metrics (and ICs not serving yet) appear too. Both take ?region=a,b (the query's
// region field; absent = the default region).
const (
	inventoryEndpoints  = "inventory/endpoints"
	inventoryComponents = "inventory/components" // ?endpoint=a,b narrows to those endpoints' ICs
)

// inventoryValues answers {"values": [...]}: the endpoint names, or the inference component
// names of the endpoints given, of every region asked for, sorted and distinct. A region
// that fails fails the call, naming it: a variable silently missing a region's names would
// hide its resources.
func (d *Datasource) inventoryValues(ctx context.Context, req *backend.CallResourceRequest, path string) *backend.CallResourceResponse {
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
	field := u.Query().Get("region")
	regions, err := d.regionsOf("", field)
	if err != nil {
		return problemJSON(refused(err), "parameter region: ")
	}
	invs := make([]awsapi.Inventory, len(regions))
	rgs, errs := d.eachRegion(ctx, "inventory lookup", regions, func(ctx context.Context, i int, rg *regional) error {
		err := readInventory(ctx, rg, &invs[i])()
		if err == nil && path == inventoryComponents {
			// Endpoint names are complete without the IC permissions; IC names are not.
			err = invs[i].ComponentsErr
		}
		return err
	})
	for i, err := range errs {
		var p *panics.Error
		switch {
		case err == nil:
			continue
		case errors.As(err, &p): // logged where it was recovered
			return errorResponseJSON(http.StatusInternalServerError, "internal", "internal error while answering "+path+"; please report it")
		}
		prefix := ""
		if field != "" {
			prefix = "region " + regions[i] + ": "
		}
		return problemJSON(rgs[i].explain(awsErr(err), ""), prefix)
	}
	f := health.Filter{Endpoints: endpoints}
	values := []string{}
	for _, inv := range invs {
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
	}
	slices.Sort(values)
	body, _ := json.Marshal(map[string][]string{"values": slices.Compact(values)})
	return jsonResponse(http.StatusOK, body)
}
