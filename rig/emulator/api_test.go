package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// TestConformance covers each path, verb and parameter form that CloudWatch accepts,
// and checks what comes back.
func TestConformance(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	gauge := `{"http.server.active_requests"}`
	start, end := t0.Add(-10*time.Minute), t0
	rangeParams := func(step string) url.Values {
		return v("query", gauge, "start", unix(start), "end", unix(end), "step", step)
	}
	cases := []struct {
		name, method, path string
		params             url.Values
		resultType         string // for /query and /query_range
		series             int    // result length
		points             int    // points per series for matrices, 0 to skip
		strs               []string
	}{
		{name: "scalar GET", method: "GET", path: "/api/v1/query", params: v("query", "1+1"), resultType: "scalar"},
		{name: "scalar POST", method: "POST", path: "/api/v1/query", params: v("query", "1+1"), resultType: "scalar"},
		{name: "instant default time", method: "GET", path: "/api/v1/query", params: v("query", gauge), resultType: "vector", series: 3},
		{name: "instant RFC 3339", method: "POST", path: "/api/v1/query", params: v("query", gauge, "time", t0.Format(time.RFC3339)), resultType: "vector", series: 3},
		{name: "instant unix", method: "GET", path: "/api/v1/query", params: v("query", gauge, "time", unix(t0)), resultType: "vector", series: 3},
		{name: "instant fractional unix", method: "GET", path: "/api/v1/query", params: v("query", gauge, "time", fmt.Sprintf("%d.282", t0.Unix())), resultType: "vector", series: 3},
		{name: "instant before data", method: "GET", path: "/api/v1/query", params: v("query", gauge, "time", unix(t0.Add(-2*time.Hour))), resultType: "vector", series: 0},
		{name: "sum drops labels", method: "POST", path: "/api/v1/query", params: v("query", "sum("+gauge+")"), resultType: "vector", series: 1},
		{name: "range selector in instant query", method: "GET", path: "/api/v1/query", params: v("query", gauge+"[5m]"), resultType: "matrix", series: 3, points: 5},
		{name: "ignored params", method: "POST", path: "/api/v1/query", params: v("query", gauge, "timeout", "60s", "stats", "all", "lookback_delta", "1m", "foo", "bar"), resultType: "vector", series: 3},
		{name: "range float step", method: "POST", path: "/api/v1/query_range", params: rangeParams("60"), resultType: "matrix", series: 3, points: 11},
		{name: "range fractional step", method: "GET", path: "/api/v1/query_range", params: rangeParams("150.0"), resultType: "matrix", series: 3, points: 5},
		{name: "range duration step", method: "GET", path: "/api/v1/query_range", params: rangeParams("1m"), resultType: "matrix", series: 3, points: 11},
		{name: "range compound step", method: "GET", path: "/api/v1/query_range", params: rangeParams("2m30s"), resultType: "matrix", series: 3, points: 5},
		{name: "range RFC 3339", method: "GET", path: "/api/v1/query_range",
			params: v("query", gauge, "start", start.Format(time.RFC3339), "end", end.Format(time.RFC3339Nano), "step", "5m"), resultType: "matrix", series: 3, points: 3},
		{name: "range scalar", method: "GET", path: "/api/v1/query_range", params: v("query", "1+1", "start", unix(start), "end", unix(end), "step", "5m"), resultType: "matrix", series: 1, points: 3},
		{name: "series GET", method: "GET", path: "/api/v1/series", params: v("match[]", gauge, "start", unix(start), "end", unix(end)), series: 3},
		{name: "series POST two selectors", method: "POST", path: "/api/v1/series",
			params: v("match[]", `{"http.server.active_requests","@resource.service.name"="search"}`, "match[]", `http_requests_total`, "start", unix(start), "end", unix(end)), series: 2},
		{name: "series regex on other label", method: "GET", path: "/api/v1/series",
			params: v("match[]", `{"http.server.active_requests","@resource.service.name"=~"b.*|c.*"}`, "start", start.Format(time.RFC3339), "end", end.Format(time.RFC3339)), series: 2},
		{name: "labels GET", method: "GET", path: "/api/v1/labels", params: v("match[]", counter),
			strs: []string{"__name__", "__temporality__", "__type__", "method"}},
		{name: "labels POST empty body", method: "POST", path: "/api/v1/labels", params: url.Values{},
			strs: []string{"@aws.region", "@resource.cloud.availability_zone", "@resource.host.id", "@resource.service.name", "__name__", "__temporality__", "__type__",
				"aws.sagemaker.endpoint.name", "aws.sagemaker.inference_component.name", "idx", "method"}},
		{name: "labels name-less match", method: "GET", path: "/api/v1/labels", params: v("match[]", `{method="POST"}`),
			strs: []string{"__name__", "__temporality__", "__type__", "method"}},
		{name: "values percent-encoded @", method: "GET", path: "/api/v1/label/%40resource.host.id/values", strs: []string{"i-0abc"}},
		{name: "values literal @", method: "GET", path: "/api/v1/label/@resource.service.name/values", strs: services},
		{name: "values dotted bare", method: "GET", path: "/api/v1/label/aws.sagemaker.endpoint.name/values", strs: []string{"ep-1"}},
		{name: "values U__ escaped", method: "GET", path: "/api/v1/label/U__aws_2e_sagemaker_2e_endpoint_2e_name/values", strs: []string{"ep-1"}},
		{name: "values with match", method: "GET", path: "/api/v1/label/method/values", params: v("match[]", counter), strs: []string{"POST"}},
		{name: "metric names", method: "GET", path: "/api/v1/label/__name__/values", params: v("match[]", `{method=~".+"}`), strs: []string{gaugeName, counter}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, nil, srv.URL, tc.method, tc.path, tc.params)
			if r.status != http.StatusOK || r.env.Status != "success" {
				t.Fatalf("status %d %q, want 200 success: %s", r.status, r.env.Status, r.raw)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if id := r.header.Get("x-amzn-RequestId"); !uuidRE.MatchString(id) {
				t.Errorf("x-amzn-RequestId %q is not a UUID", id)
			}
			if strings.Contains(string(r.raw), `"warnings"`) || strings.Contains(string(r.raw), `"infos"`) {
				t.Errorf("empty warnings/infos must be left out: %s", r.raw)
			}
			switch {
			case tc.resultType != "":
				if rt := string(mustField(t, r.env.Data, "resultType")); rt != `"`+tc.resultType+`"` {
					t.Fatalf("resultType %s, want %q", rt, tc.resultType)
				}
				if tc.resultType == "scalar" {
					var sc []any
					_ = json.Unmarshal(mustField(t, r.env.Data, "result"), &sc)
					if len(sc) != 2 || sc[1] != "2" {
						t.Errorf("scalar result %v, want [ts, \"2\"]", sc)
					}
					return
				}
				q := decodeQuery(t, r)
				if len(q.Result) != tc.series {
					t.Fatalf("%d series, want %d: %s", len(q.Result), tc.series, r.raw)
				}
				if tc.points > 0 {
					var pts [][]any
					if err := json.Unmarshal(q.Result[0].Values, &pts); err != nil || len(pts) != tc.points {
						t.Errorf("%d points (%v), want %d", len(pts), err, tc.points)
					}
				}
			case tc.path == "/api/v1/series":
				var got []map[string]string
				if err := json.Unmarshal(r.env.Data, &got); err != nil || len(got) != tc.series {
					t.Fatalf("series %v (%v), want %d", got, err, tc.series)
				}
				for _, ls := range got {
					if ls["__name__"] == "" {
						t.Errorf("series without __name__: %v", ls)
					}
				}
			default:
				if got := decodeStrings(t, r); !slices.Equal(got, tc.strs) {
					t.Errorf("got %q, want %q", got, tc.strs)
				}
			}
		})
	}
}

func mustField(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	return m[key]
}

// TestErrors checks each rejection: status, errorType and a message naming the problem.
func TestErrors(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	gauge := `{"http.server.active_requests"}`
	now := unix(t0)
	week := 7 * 24 * time.Hour
	rng := func(q string, span time.Duration, step string) url.Values {
		return v("query", q, "start", unix(t0.Add(-span)), "end", now, "step", step)
	}
	cases := []struct {
		name, method, path string
		params             url.Values
		status             int
		errType, msg       string
	}{
		// Routes and verbs.
		{"buildinfo", "GET", "/api/v1/status/buildinfo", nil, 404, "not_found", "not part of the CloudWatch PromQL API"},
		{"metadata", "GET", "/api/v1/metadata", nil, 404, "not_found", "/api/v1/metadata"},
		{"rules", "GET", "/api/v1/rules", nil, 404, "not_found", ""},
		{"exemplars", "POST", "/api/v1/query_exemplars", v("query", gauge), 404, "not_found", ""},
		{"format_query", "GET", "/api/v1/format_query", nil, 404, "not_found", ""},
		{"federate", "GET", "/federate", nil, 404, "not_found", ""},
		{"root", "GET", "/", nil, 404, "not_found", ""},
		{"empty label name", "GET", "/api/v1/label//values", nil, 404, "not_found", ""},
		{"nested label path", "GET", "/api/v1/label/a/b/values", nil, 404, "not_found", ""},
		{"values POST", "POST", "/api/v1/label/method/values", url.Values{}, 405, "method_not_allowed", "GET only"},
		{"query PUT", "PUT", "/api/v1/query", nil, 405, "method_not_allowed", "use GET or POST"},
		{"labels DELETE", "DELETE", "/api/v1/labels", nil, 405, "method_not_allowed", ""},
		// Query parameters.
		{"missing query", "GET", "/api/v1/query", nil, 400, "bad_data", `missing parameter "query"`},
		{"parse error", "POST", "/api/v1/query", v("query", "sum("), 400, "bad_data", "unclosed left parenthesis"},
		{"nested braces", "GET", "/api/v1/query", v("query", "invalid{{{"), 400, "bad_data", "unexpected left brace"},
		{"empty name regex", "GET", "/api/v1/query", v("query", `{__name__=~""}`), 400, "bad_data", "at least one non-empty matcher"},
		{"unquoted dotted name", "GET", "/api/v1/query", v("query", "http.server.active_requests"), 400, "bad_data", "parse error"},
		{"bad time", "GET", "/api/v1/query", v("query", gauge, "time", "yesterday"), 400, "bad_data", `invalid parameter "time": cannot parse "yesterday" to a valid timestamp`},
		{"NaN time", "GET", "/api/v1/query", v("query", gauge, "time", "NaN"), 400, "bad_data", "valid timestamp"},
		{"range vector range query", "GET", "/api/v1/query_range", rng(gauge+"[5m]", time.Hour, "60"), 400, "bad_data", "invalid expression type"},
		{"missing start", "GET", "/api/v1/query_range", v("query", gauge, "end", now, "step", "60"), 400, "bad_data", `missing parameter "start"`},
		{"missing step", "GET", "/api/v1/query_range", v("query", gauge, "start", now, "end", now), 400, "bad_data", `missing parameter "step"`},
		{"bad step", "GET", "/api/v1/query_range", rng(gauge, time.Hour, "often"), 400, "bad_data", `invalid parameter "step": cannot parse "often" to a valid duration`},
		{"zero step", "POST", "/api/v1/query_range", rng(gauge, time.Hour, "0"), 400, "bad_data", "zero or negative query resolution step widths are not accepted"},
		{"negative step", "GET", "/api/v1/query_range", rng(gauge, time.Hour, "-15"), 400, "bad_data", "zero or negative query resolution step widths are not accepted"},
		{"end before start", "GET", "/api/v1/query_range", v("query", gauge, "start", now, "end", unix(t0.Add(-time.Hour)), "step", "60"), 400, "bad_data", "end timestamp must not be before start time"},
		{"too many points", "GET", "/api/v1/query_range", rng(gauge, 11001*time.Second, "1"), 400, "bad_data", "exceeded maximum resolution of 11000 points per timeseries"},
		// Metric-name rule.
		{"label-only selector", "GET", "/api/v1/query", v("query", `{job="x"}`), 400, "bad_data", `Selector must have a metric name: {job="x"}`},
		{"regex on name", "POST", "/api/v1/query", v("query", `{__name__=~".+"}`), 400, "bad_data", "Selector must have a metric name"},
		{"negative regex beside exact name", "GET", "/api/v1/query", v("query", `{__name__="a",__name__!~"b"}`), 400, "bad_data", "regular expression on the metric name"},
		{"name-less inside function", "GET", "/api/v1/query", v("query", `sum(rate({method="GET"}[5m]))`), 400, "bad_data", "Selector must have a metric name"},
		{"name-less on one side", "GET", "/api/v1/query_range", rng(gauge+` / on() {method="GET"}`, time.Hour, "60"), 400, "bad_data", "Selector must have a metric name"},
		{"series name-less match", "GET", "/api/v1/series", v("match[]", `{method="GET"}`, "start", now, "end", now), 400, "bad_data", "Selector must have a metric name"},
		{"series name regex", "POST", "/api/v1/series", v("match[]", `{__name__=~"http.*"}`, "start", now, "end", now), 400, "bad_data", "Selector must have a metric name"},
		// Discovery parameters.
		{"series without match", "GET", "/api/v1/series", v("start", now, "end", now), 400, "bad_data", "no match[] parameter provided"},
		{"series without start", "GET", "/api/v1/series", v("match[]", gauge, "end", now), 400, "bad_data", `missing parameter "start"`},
		{"series without end", "POST", "/api/v1/series", v("match[]", gauge, "start", now), 400, "bad_data", `missing parameter "end"`},
		{"series bad selector", "GET", "/api/v1/series", v("match[]", "{", "start", now, "end", now), 400, "bad_data", `invalid parameter "match[]"`},
		{"labels end before start", "GET", "/api/v1/labels", v("start", now, "end", unix(t0.Add(-time.Second))), 400, "bad_data", "end timestamp must not be before start time"},
		{"invalid UTF-8 label name", "GET", "/api/v1/label/%FF/values", nil, 400, "bad_data", "invalid label name"},
		// Limits.
		{"query limit 0", "GET", "/api/v1/query", v("query", gauge, "limit", "0"), 400, "bad_data", "use a whole number from 1 to 500"},
		{"query limit 501", "POST", "/api/v1/query", v("query", gauge, "limit", "501"), 400, "bad_data", "501 is out of range"},
		{"query limit text", "GET", "/api/v1/query", v("query", gauge, "limit", "lots"), 400, "bad_data", `"lots" is not an integer`},
		{"range limit 40000", "GET", "/api/v1/query_range", func() url.Values { p := rng(gauge, time.Hour, "60"); p.Set("limit", "40000"); return p }(), 400, "bad_data", "from 1 to 500"},
		{"series limit 10001", "GET", "/api/v1/series", v("match[]", gauge, "start", now, "end", now, "limit", "10001"), 400, "bad_data", "from 1 to 10000"},
		{"labels limit 0", "GET", "/api/v1/labels", v("limit", "0"), 400, "bad_data", "from 1 to 10000"},
		{"values limit 40000", "GET", "/api/v1/label/method/values", v("limit", "40000"), 400, "bad_data", "from 1 to 10000"},
		{"range over 7 days", "GET", "/api/v1/query_range", rng(gauge, 8*24*time.Hour, "3600"), 422, "execution", "exceeds the maximum of 7d: it reads 8d4m59s999ms"},
		{"7 days plus lookback", "GET", "/api/v1/query_range", rng(gauge, week, "3600"), 422, "execution", "5m lookback"},
		{"7 days plus window", "GET", "/api/v1/query_range", rng("rate("+gauge+"[5m])", week-time.Minute, "3600"), 422, "execution", "range-selector windows"},
		{"window over 7 days", "GET", "/api/v1/query", v("query", gauge+"[8d]"), 422, "execution", "reads 7d23h59m59s999ms"},
		{"subquery over 7 days", "GET", "/api/v1/query", v("query", "max_over_time("+gauge+"[7d:1h])"), 422, "execution", "exceeds the maximum"},
		{"@ far in the past", "GET", "/api/v1/query", v("query", gauge+" @ 0 + "+gauge), 422, "execution", "exceeds the maximum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, nil, srv.URL, tc.method, tc.path, tc.params)
			if r.status != tc.status || r.env.Status != "error" || r.env.ErrorType != tc.errType {
				t.Fatalf("got %d %q/%q, want %d error/%q: %s", r.status, r.env.Status, r.env.ErrorType, tc.status, tc.errType, r.raw)
			}
			if !strings.Contains(r.env.Error, tc.msg) {
				t.Errorf("error %q does not contain %q", r.env.Error, tc.msg)
			}
			if !uuidRE.MatchString(r.header.Get("x-amzn-RequestId")) {
				t.Errorf("error response lacks x-amzn-RequestId")
			}
		})
	}
}

// TestWithinLimits pins the edges that must still succeed.
func TestWithinLimits(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	gauge := `{"http.server.active_requests"}`
	week := 7 * 24 * time.Hour
	cases := []struct {
		name   string
		path   string
		params url.Values
	}{
		{"window of exactly 7 days", "/api/v1/query", v("query", "max_over_time("+gauge+"[7d])")},
		{"range of 7 days minus lookback", "/api/v1/query_range", v("query", gauge, "start", unix(t0.Add(-week+5*time.Minute)), "end", unix(t0), "step", "3600")},
		{"11000 points", "/api/v1/query_range", v("query", "1", "start", unix(t0.Add(-11000*time.Second)), "end", unix(t0), "step", "1")},
		{"query limit 500", "/api/v1/query", v("query", gauge, "limit", "500")},
		{"series limit 10000", "/api/v1/series", v("match[]", gauge, "start", unix(t0), "end", unix(t0), "limit", "10000")},
		{"series over 8 days", "/api/v1/series", v("match[]", gauge, "start", unix(t0.Add(-8*24*time.Hour)), "end", unix(t0))},
		{"offset back a month", "/api/v1/query", v("query", gauge+" offset 30d")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if r := call(t, nil, srv.URL, "GET", tc.path, tc.params); r.status != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", r.status, r.raw)
			}
		})
	}
}

func TestClampLimit(t *testing.T) {
	srv := newTestServer(t, Config{Limits: Limits{ClampLimit: true, QueryTPS: -1}})
	r := call(t, nil, srv.URL, "GET", "/api/v1/query", v("query", `{"many.series"}`, "limit", "40000"))
	if r.status != http.StatusOK || len(decodeQuery(t, r).Result) != 500 {
		t.Fatalf("clamped limit: status %d, want 200 with 500 series: %.300s", r.status, r.raw)
	}
	r = call(t, nil, srv.URL, "GET", "/api/v1/query", v("query", `{"many.series"}`, "limit", "0"))
	if got := len(decodeQuery(t, r).Result); r.status != http.StatusOK || got != 1 {
		t.Fatalf("limit 0 clamps to 1: status %d, %d series", r.status, got)
	}
}

func TestTruncation(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	many := `{"many.series"}`
	cases := []struct {
		name, path string
		params     url.Values
		want       int
		warning    string
	}{
		{"query default", "/api/v1/query", v("query", many), 500,
			"result truncated to the maximum of 500 series; refine the query or use the limit parameter"},
		{"query limit", "/api/v1/query", v("query", many, "limit", "7"), 7,
			"result truncated to the maximum of 7 series; refine the query or use the limit parameter"},
		{"range limit", "/api/v1/query_range", v("query", many, "start", unix(t0.Add(-time.Minute)), "end", unix(t0), "step", "60", "limit", "3"), 3,
			"result truncated to the maximum of 3 series"},
		{"series limit", "/api/v1/series", v("match[]", many, "start", unix(t0), "end", unix(t0), "limit", "4"), 4,
			"result truncated to the maximum of 4 series"},
		{"labels limit", "/api/v1/labels", v("limit", "2"), 2, "result truncated to the maximum of 2 labels"},
		{"values limit", "/api/v1/label/idx/values", v("limit", "5"), 5, "result truncated to the maximum of 5 label values"},
		{"exact fit", "/api/v1/query", v("query", `{"http.server.active_requests"}`, "limit", "3"), 3, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, nil, srv.URL, "GET", tc.path, tc.params)
			if r.status != http.StatusOK {
				t.Fatalf("status %d, want 200: %.300s", r.status, r.raw)
			}
			var items []json.RawMessage
			data := r.env.Data
			if strings.HasPrefix(tc.path, "/api/v1/query") {
				data = mustField(t, data, "result")
			}
			if err := json.Unmarshal(data, &items); err != nil || len(items) != tc.want {
				t.Fatalf("%d items (%v), want %d", len(items), err, tc.want)
			}
			if tc.warning == "" {
				if len(r.env.Warnings) != 0 {
					t.Fatalf("unexpected warnings %q", r.env.Warnings)
				}
				return
			}
			if len(r.env.Warnings) != 1 || !strings.HasPrefix(r.env.Warnings[0], tc.warning) {
				t.Errorf("warnings %q, want one starting %q", r.env.Warnings, tc.warning)
			}
		})
	}
}

// TestDatapointAliases: bare datapoint labels also answer to "@datapoint.<name>", and
// "@datapoint.@name" is the metric name; results keep the bare form.
func TestDatapointAliases(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	get := func(path string, params url.Values) reply {
		r := call(t, nil, srv.URL, "GET", path, params)
		if r.status != http.StatusOK {
			t.Fatalf("%s %v: status %d: %s", path, params, r.status, r.raw)
		}
		return r
	}
	instant := func(q string) queryResult { return decodeQuery(t, get("/api/v1/query", v("query", q))) }

	bare := instant(`{"http.server.active_requests", method="GET", "@resource.service.name"="search"}`)
	cases := []string{
		`{"http.server.active_requests", "@datapoint.method"="GET", "@resource.service.name"="search"}`,
		`{"@datapoint.@name"="http.server.active_requests", method="GET", "@resource.service.name"="search"}`,
		`{"@datapoint.@name"="http.server.active_requests", "@datapoint.method"=~"G.T", "@resource.service.name"="search"}`,
	}
	if len(bare.Result) != 1 {
		t.Fatalf("baseline: %d series, want 1", len(bare.Result))
	}
	for _, q := range cases {
		got := instant(q)
		if len(got.Result) != 1 || !maps(got.Result[0].Metric, bare.Result[0].Metric) || string(got.Result[0].Value) != string(bare.Result[0].Value) {
			t.Errorf("%s: got %+v, want %+v", q, got.Result, bare.Result)
		}
		for k := range got.Result[0].Metric {
			if strings.HasPrefix(k, "@datapoint.") {
				t.Errorf("%s: result shows alias label %q", q, k)
			}
		}
	}
	if got := instant(`{"http.server.active_requests", "@datapoint.method"="POST"}`); len(got.Result) != 0 {
		t.Errorf("alias must filter too: got %d series for method POST", len(got.Result))
	}
	if got := instant(`sum by (method) ({"@datapoint.@name"="http_requests_total"})`); len(got.Result) != 1 || got.Result[0].Metric["method"] != "POST" {
		t.Errorf("aggregation over alias selector: %+v", got.Result)
	}
	if vals := decodeStrings(t, get("/api/v1/label/%40datapoint.method/values", nil)); !slices.Equal(vals, []string{"GET", "POST"}) {
		t.Errorf("values of @datapoint.method: %q", vals)
	}
	if vals := decodeStrings(t, get("/api/v1/label/@datapoint.@name/values", v("match[]", `{"@datapoint.method"="POST"}`))); !slices.Equal(vals, []string{counter}) {
		t.Errorf("values of @datapoint.@name: %q", vals)
	}
	var series []map[string]string
	r := get("/api/v1/series", v("match[]", `{"@datapoint.@name"="http_requests_total"}`, "start", unix(t0), "end", unix(t0)))
	if err := json.Unmarshal(r.env.Data, &series); err != nil || len(series) != 1 || series[0]["__name__"] != counter {
		t.Errorf("series by @datapoint.@name: %s", r.raw)
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestNameValuesDisabled(t *testing.T) {
	srv := newTestServer(t, Config{NameValuesDisabled: true, Limits: unthrottled()})
	for _, path := range []string{"/api/v1/label/__name__/values", "/api/v1/label/%40datapoint.%40name/values"} {
		r := call(t, nil, srv.URL, "GET", path, nil)
		if r.status != http.StatusNotFound || r.env.ErrorType != "not_found" || !strings.Contains(r.env.Error, "NOT supported") {
			t.Errorf("%s: got %d %s", path, r.status, r.raw)
		}
	}
	if r := call(t, nil, srv.URL, "GET", "/api/v1/label/method/values", nil); r.status != http.StatusOK {
		t.Errorf("other label values must still work: %d", r.status)
	}
}

// TestTruncatedUnionIsExact: with several match[] selectors the truncated list is the
// smallest names of the union, not whichever each selector read first.
func TestTruncatedUnionIsExact(t *testing.T) {
	srv := newTestServer(t, Config{Limits: unthrottled()})
	r := call(t, nil, srv.URL, "POST", "/api/v1/labels", v("match[]", counter, "match[]", `{"http.server.active_requests"}`, "limit", "4"))
	want := []string{"@aws.region", "@resource.service.name", "__name__", "__temporality__"}
	if got := decodeStrings(t, r); !slices.Equal(got, want) || len(r.env.Warnings) != 1 {
		t.Errorf("got %q (warnings %q), want %q and one warning", got, r.env.Warnings, want)
	}
}
