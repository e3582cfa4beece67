package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// CallResource serves the editor's and the template variables' calls. Only the paths
// CloudWatch implements are forwarded; the Prometheus paths it lacks are answered here
// without an upstream call, so the editor degrades quietly instead of showing errors. The handler
// works on req.Path itself (rather than through an http.ServeMux) because label names in
// the path may hold any UTF-8 character.
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	defer d.store.enter()()
	var resp *backend.CallResourceResponse
	func() {
		defer panics.Recover(func(p *panics.Error) {
			logError("resource call panicked", "path", req.Path, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
			resp = errorResponseJSON(http.StatusInternalServerError, "internal", "internal error while answering "+req.Path+"; please report it")
		})
		resp = d.resource(ctx, req)
	}()
	resp.Body = d.redact.Bytes(resp.Body)
	return sender.Send(resp)
}

// servedPaths are the paths besides api/v1/label/<name>/values that need the settings.
var servedPaths = []string{"api/v1/labels", "api/v1/series", "api/v1/query", inventoryEndpoints, inventoryComponents, regionsResource}

func (d *Datasource) resource(ctx context.Context, req *backend.CallResourceRequest) *backend.CallResourceResponse {
	path := strings.Trim(req.Path, "/")
	switch path {
	case "api/v1/metadata":
		// CloudWatch has no metric metadata; an empty map keeps the editor's hints quiet.
		return jsonResponse(http.StatusOK, []byte(`{"status":"success","data":{}}`))
	case "api/v1/rules":
		// No recording or alerting rules API exists; the frontend loads rules on start-up.
		return jsonResponse(http.StatusOK, []byte(`{"status":"success","data":{"groups":[]}}`))
	case alertRulesResource:
		return alertRules(req)
	case "api/v1/status/buildinfo", "api/v1/query_exemplars":
		// A 404 tells the frontend there is no build info and no exemplar support.
		return notFound(path)
	}
	name, isLabelValues := labelValuesName(path)
	if err := models.CheckLen("the label name", name, models.MaxNameBytes); err != nil {
		return errorResponseJSON(http.StatusBadRequest, "bad_data", err.Error())
	}
	if !isLabelValues && !slices.Contains(servedPaths, path) {
		return notFound(path)
	}
	if d.setupErr != nil {
		return errorResponseJSON(http.StatusBadRequest, "bad_data", d.setupErr.Error())
	}
	switch path {
	case inventoryEndpoints, inventoryComponents:
		return d.inventoryValues(ctx, req, path)
	case regionsResource:
		return d.regionsValues(ctx, req)
	}
	if req.Method != http.MethodGet && req.Method != http.MethodPost {
		return errorResponseJSON(http.StatusMethodNotAllowed, "bad_data",
			fmt.Sprintf("method %s is not allowed on %s: use GET or POST", req.Method, path))
	}
	p, err := parseResourceParams(req)
	if err != nil {
		return errorResponseJSON(http.StatusBadRequest, "bad_data", err.Error())
	}
	rg, bad := d.regionParam(ctx, p.values)
	if bad != nil {
		return bad
	}
	var body []byte
	err = rg.lookup(ctx, req, path, name, isLabelValues, p, &body)
	if err != nil && isLabelValues && name == "__name__" && isStatus(err, http.StatusNotFound) {
		// Reports disagree on whether CloudWatch lists metric names; when it does not, the
		// editor's metric picker gets an empty list and a reason instead of an error.
		return jsonResponse(http.StatusOK, []byte(`{"status":"success","data":[],"warnings":["CloudWatch did not list metric names (404 on /api/v1/label/__name__/values): type the metric name into the query"]}`))
	}
	if err != nil {
		return problemJSON(rg.explain(err, "cloudwatch:ListMetrics"), "")
	}
	resp := jsonResponse(http.StatusOK, body)
	if cc := cacheControl(req.GetHTTPHeader("X-Grafana-Cache")); cc != "" {
		resp.Headers["Cache-Control"] = []string{cc}
		resp.Headers["X-Grafana-Cache"] = []string{"y"}
	}
	return resp
}

// forward makes the CloudWatch call a resource path stands for, in the region.
func (rg *regional) forward(ctx context.Context, path, labelName string, isLabelValues bool, p resourceParams, decode promclient.Decode) error {
	switch {
	case isLabelValues:
		// The name arrives decoded; promclient escapes it again and always uses GET,
		// the only method CloudWatch accepts on this path.
		return rg.client.LabelValues(ctx, labelName, p.matchers, p.start, p.end, p.limit(promclient.MaxDiscoveryLimit), decode)
	case path == "api/v1/labels":
		return rg.client.Labels(ctx, p.matchers, p.start, p.end, p.limit(promclient.MaxDiscoveryLimit), decode)
	case path == "api/v1/series":
		return rg.client.Series(ctx, p.matchers, p.start, p.end, p.limit(promclient.MaxDiscoveryLimit), decode)
	}
	// api/v1/query, for query_result() variables: the raw JSON goes back untouched.
	expr := p.values.Get("query")
	if strings.TrimSpace(expr) == "" {
		return backend.DownstreamErrorf("the query parameter is missing: send query=<PromQL expression>")
	}
	at := p.time
	if at.IsZero() {
		at = time.Now()
	}
	return rg.client.Query(ctx, expr, at, p.limit(promclient.MaxQueryLimit), decode)
}

// isStatus reports whether err is CloudWatch answering with the given HTTP status.
func isStatus(err error, status int) bool {
	var apiErr *promclient.APIError
	return errors.As(err, &apiErr) && apiErr.Status == status
}

// labelValuesName extracts and decodes <name> from api/v1/label/<name>/values. Grafana
// hands the path over already percent-decoded, but a still-encoded name (%40resource.host.id)
// is decoded too, and the Prometheus frontend's U__ escaping of UTF-8 names
// (U___40_resource_2e_host_2e_id) is undone.
func labelValuesName(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "api/v1/label/")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, "/values")
	if !ok || name == "" {
		return "", false
	}
	if strings.Contains(name, "%") {
		if dec, err := url.PathUnescape(name); err == nil {
			name = dec
		}
	}
	return model.UnescapeName(name, model.ValueEncodingEscaping), true
}

// maxMatchers bounds the match[] selectors of one resource call.
const maxMatchers = 100

// resourceParams are the parameters of a resource call, from the query string and, for a
// form POST, the body.
type resourceParams struct {
	values         url.Values
	matchers       []string
	start, end     time.Time // zero when not given: CloudWatch applies its default
	time           time.Time
	requestedLimit int // 0 when not given
}

func parseResourceParams(req *backend.CallResourceRequest) (resourceParams, error) {
	var p resourceParams
	u, err := url.Parse(req.URL)
	if err != nil {
		return p, fmt.Errorf("the request URL cannot be parsed: %v", err)
	}
	p.values = u.Query()
	if req.Method == http.MethodPost && len(req.Body) > 0 {
		ct := req.GetHTTPHeader("Content-Type")
		mt, _, _ := mime.ParseMediaType(ct)
		if ct != "" && mt != "application/x-www-form-urlencoded" {
			return p, fmt.Errorf("content type %q is not supported: send the parameters as application/x-www-form-urlencoded", ct)
		}
		form, err := url.ParseQuery(string(req.Body))
		if err != nil {
			return p, fmt.Errorf("the form body cannot be parsed: %v", err)
		}
		for k, vs := range form {
			p.values[k] = append(p.values[k], vs...)
		}
	}
	p.matchers = p.values["match[]"]
	if len(p.matchers) > maxMatchers {
		return p, fmt.Errorf("%d match[] selectors are more than the %d accepted: send fewer", len(p.matchers), maxMatchers)
	}
	for _, m := range p.matchers {
		if err := models.CheckLen("a match[] selector", m, models.MaxExprBytes); err != nil {
			return p, err
		}
	}
	if err := models.CheckLen("the query parameter", p.values.Get("query"), models.MaxExprBytes); err != nil {
		return p, err
	}
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"start", &p.start}, {"end", &p.end}, {"time", &p.time}} {
		if v := p.values.Get(f.name); v != "" {
			t, err := parseTime(v)
			if err != nil {
				return p, fmt.Errorf("parameter %s: %v", f.name, err)
			}
			*f.dst = t
		}
	}
	if v := p.values.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, fmt.Errorf("parameter limit: %q is not a whole number ≥ 0", v)
		}
		p.requestedLimit = n
	}
	return p, nil
}

// limit clamps the requested limit to CloudWatch's maximum: Grafana's frontend asks for
// up to 40000, which CloudWatch would otherwise have to judge.
func (p resourceParams) limit(maximum int) int {
	return min(p.requestedLimit, maximum)
}

// parseTime reads a Prometheus API timestamp: Unix seconds (fractions allowed) or RFC 3339.
func parseTime(s string) (time.Time, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
			return time.Time{}, fmt.Errorf("%q is not a usable Unix time", s)
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither Unix seconds nor RFC 3339", s)
	}
	return t, nil
}

var maxAge = regexp.MustCompile(`(?:^|[\s,])max-age=(\d{1,9})(?:$|[\s,])`)

// cacheControl turns the frontend's X-Grafana-Cache request header ("private, max-age=60")
// into the Cache-Control the browser should honour; "" when there is nothing to echo.
func cacheControl(header string) string {
	m := maxAge.FindStringSubmatch(header)
	if m == nil {
		return ""
	}
	return "private, max-age=" + m[1]
}

func jsonResponse(status int, body []byte) *backend.CallResourceResponse {
	return &backend.CallResourceResponse{
		Status:  status,
		Headers: map[string][]string{"Content-Type": {"application/json"}},
		Body:    body,
	}
}

// errorResponseJSON answers in the Prometheus error envelope the frontend already parses.
func errorResponseJSON(status int, errorType, msg string) *backend.CallResourceResponse {
	body, _ := json.Marshal(map[string]string{"status": "error", "errorType": errorType, "error": msg})
	return jsonResponse(status, body)
}

func notFound(path string) *backend.CallResourceResponse {
	return errorResponseJSON(http.StatusNotFound, "not_found",
		fmt.Sprintf("CloudWatch's PromQL API has no /%s endpoint", path))
}

// errorTypeFor picks the Prometheus errorType that matches an HTTP status.
func errorTypeFor(status int) string {
	switch {
	case status == http.StatusBadRequest:
		return "bad_data"
	case status == http.StatusUnprocessableEntity:
		return "execution"
	case status == http.StatusGatewayTimeout || status == http.StatusServiceUnavailable:
		return "timeout"
	case status == http.StatusNotFound:
		return "not_found"
	case status >= 500:
		return "internal"
	}
	return "unavailable"
}
