package awsemu

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// The Price List API in awsJson1_1: POST / with X-Amz-Target AWSPriceListService.<Op>,
// signed for "pricing". GetProducts answers from prices.json, one product per instance
// type, region and component in the shape AWS gives them (PriceList entries are JSON
// strings: product.attributes, terms.OnDemand.<offer>.priceDimensions.<rate>.pricePerUnit).
const (
	pricingTgt      = "AWSPriceListService."
	svcPricing      = "pricing"
	pricingService  = "AmazonSageMaker"
	pricingFormat   = "aws_v1"
	pricesPageLimit = 100
)

var pricingOps = []string{"GetProducts"}

//go:embed prices.json
var pricesFixture []byte

// priceFile is prices.json: hourly USD by component, region and instance type.
type priceFile struct {
	EffectiveDate   string                        `json:"effectiveDate"`
	PublicationDate string                        `json:"publicationDate"`
	Hosting         map[string]map[string]float64 `json:"hosting"`
	Training        map[string]map[string]float64 `json:"training"`
}

// products are the fixture's PriceList entries with the attributes filters match, sorted
// by region, component and type so pages are stable; built once.
var products = sync.OnceValues(func() ([]priceProduct, error) {
	var f priceFile
	if err := json.Unmarshal(pricesFixture, &f); err != nil {
		return nil, fmt.Errorf("prices.json: %w", err)
	}
	var out []priceProduct
	for component, byRegion := range map[string]map[string]map[string]float64{"Hosting": f.Hosting, "Training": f.Training} {
		for region, byType := range byRegion {
			for typ, usd := range byType {
				out = append(out, newProduct(f, component, region, typ, usd))
			}
		}
	}
	slices.SortFunc(out, func(a, b priceProduct) int { return strings.Compare(a.sortKey, b.sortKey) })
	return out, nil
})

type priceProduct struct {
	attrs   map[string]string // productFamily and the attributes, as filters see them
	entry   string            // the PriceList entry
	sortKey string
}

func newProduct(f priceFile, component, region, typ string, usd float64) priceProduct {
	sku := fmt.Sprintf("%X", stableHash(region+"|"+component+"|"+typ))
	attrs := map[string]string{
		"regionCode": region, "instanceName": typ, "component": component, "servicecode": pricingService,
		"servicename": "Amazon SageMaker", "locationType": "AWS Region", "operation": "RunInstance",
		"usagetype": strings.ToUpper(region[:2]) + "-" + component + ":" + typ,
	}
	offer, rate := sku+".JRTCKXETXF", sku+".JRTCKXETXF.6YS6EN2CT7"
	entry := map[string]any{
		"product":     map[string]any{"productFamily": "ML Instance", "attributes": attrs, "sku": sku},
		"serviceCode": pricingService,
		"terms": map[string]any{"OnDemand": map[string]any{offer: map[string]any{
			"offerTermCode": "JRTCKXETXF", "sku": sku, "effectiveDate": f.EffectiveDate, "termAttributes": map[string]any{},
			"priceDimensions": map[string]any{rate: map[string]any{
				"rateCode": rate, "unit": "Hrs", "beginRange": "0", "endRange": "Inf", "appliesTo": []string{},
				"description":  fmt.Sprintf("$%s per hour for %s %s", strconv.FormatFloat(usd, 'f', -1, 64), typ, component),
				"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(usd, 'f', -1, 64)},
			}},
		}}},
		"version": "20261115000000", "publicationDate": f.PublicationDate,
	}
	b, _ := json.Marshal(entry) // maps of strings and numbers always encode
	withFamily := map[string]string{"productFamily": "ML Instance"}
	for k, v := range attrs {
		withFamily[k] = v
	}
	return priceProduct{attrs: withFamily, entry: string(b), sortKey: region + "|" + component + "|" + typ}
}

type getProductsInput struct {
	ServiceCode   string
	FormatVersion string
	NextToken     string
	MaxResults    *int64
	Filters       []struct{ Type, Field, Value string }
}

// servePricing answers the Price List operations in awsJson1_1.
func (s *Server) servePricing(c emulator.Call, body []byte) emulator.Response {
	if c.Operation != "GetProducts" {
		return jsonError(&apiErr{status: http.StatusBadRequest, code: "UnknownOperationException",
			msg: fmt.Sprintf("the emulator does not serve AWSPriceListService %s; it serves %s", c.Operation, strings.Join(pricingOps, ", "))})
	}
	var in getProductsInput
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return jsonError(&apiErr{status: http.StatusBadRequest, code: "SerializationException", msg: "the request body is not GetProducts' JSON input: " + err.Error()})
		}
	}
	out, aerr := getProducts(in)
	return respondJSON(out, aerr, "InternalErrorException")
}

func getProducts(in getProductsInput) (map[string]any, *apiErr) {
	invalid := func(format string, args ...any) *apiErr {
		return &apiErr{status: http.StatusBadRequest, code: "InvalidParameterException", msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case in.ServiceCode != pricingService:
		return nil, invalid("ServiceCode %q: the emulator prices %s only", in.ServiceCode, pricingService)
	case in.FormatVersion != "" && in.FormatVersion != pricingFormat:
		return nil, invalid("FormatVersion %q is not supported; use %s", in.FormatVersion, pricingFormat)
	}
	size, msg := pageSize("MaxResults", in.MaxResults, pricesPageLimit, pricesPageLimit)
	if msg != "" {
		return nil, invalid("%s", msg)
	}
	for _, f := range in.Filters {
		if f.Type != "TERM_MATCH" {
			return nil, invalid("filter type %q on %s: the emulator supports TERM_MATCH", f.Type, f.Field)
		}
	}
	cur, ok := parseToken("GetProducts", in.NextToken)
	if !ok {
		return nil, &apiErr{status: http.StatusBadRequest, code: "InvalidNextTokenException", msg: "the next token is not valid"}
	}
	all, err := products()
	if err != nil {
		return nil, &apiErr{status: http.StatusInternalServerError, code: "InternalErrorException", msg: err.Error()}
	}
	var match []string
	for _, p := range all {
		if slices.IndexFunc(in.Filters, func(f struct{ Type, Field, Value string }) bool { return p.attrs[f.Field] != f.Value }) < 0 {
			match = append(match, p.entry)
		}
	}
	items, next := page("GetProducts", match, cur, size)
	out := map[string]any{"FormatVersion": pricingFormat, "PriceList": append([]string{}, items...)}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}
