package models

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

func regionSettings(t *testing.T, jsonData string) *Settings {
	t.Helper()
	s, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: json.RawMessage(jsonData)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseRegions(t *testing.T) {
	open := `{"defaultRegion":"us-east-1"}`
	listed := `{"defaultRegion":"us-east-1","allowedRegions":["us-west-2"],"regionEndpoints":{"us-west-2":"http://127.0.0.1:9002"}}`
	lab := `{"defaultRegion":"us-east-1","regionEndpoints":{"xx-lab-1":"http://127.0.0.1:9003"}}`
	tests := []struct {
		name, settings, field string
		want                  []string
		wantErr               []string
	}{
		{name: "empty is the default", settings: open, field: "", want: []string{"us-east-1"}},
		{name: "blank items only", settings: open, field: " , ,", want: []string{"us-east-1"}},
		{name: "one", settings: open, field: "eu-west-1", want: []string{"eu-west-1"}},
		{name: "several, trimmed, order kept", settings: open, field: " us-west-2 ,eu-west-1,, us-east-1", want: []string{"us-west-2", "eu-west-1", "us-east-1"}},
		{name: "duplicates dropped", settings: open, field: "us-west-2,us-west-2,us-east-1,us-west-2", want: []string{"us-west-2", "us-east-1"}},
		{name: "glob form", settings: open, field: "{us-east-1,us-west-2}", want: []string{"us-east-1", "us-west-2"}},
		{name: "mistyped", settings: open, field: "us-east1", wantErr: []string{`query A: region "us-east1" is not an AWS region name (like us-east-1)`, "did you mean us-east-1?"}},
		{name: "upper case", settings: open, field: "US-EAST-1", wantErr: []string{`"US-EAST-1" is not an AWS region name`, "did you mean us-east-1?"}},
		{name: "variable left as it is", settings: open, field: "$region", wantErr: []string{`"$region"`, "dashboard variable was not replaced"}},
		{name: "second item bad", settings: open, field: "us-east-1,eu-wset-1", wantErr: []string{`"eu-wset-1"`}},
		{name: "not a PromQL region", settings: open, field: "us-gov-west-1", wantErr: []string{`region "us-gov-west-1" is not allowed by this data source: add it to Allowed regions (jsonData.allowedRegions) or use one of: `}},
		{name: "not allowed by the list", settings: listed, field: "eu-west-1", wantErr: []string{`query A: region "eu-west-1" is not allowed by this data source: add it to Allowed regions (jsonData.allowedRegions) or use one of: us-east-1, us-west-2`}},
		{name: "listed and default allowed", settings: listed, field: "us-west-2,us-east-1", want: []string{"us-west-2", "us-east-1"}},
		{name: "region endpoint key allowed", settings: lab, field: "xx-lab-1", want: []string{"xx-lab-1"}},
		{name: "near a custom region", settings: lab, field: "xx-lab1", wantErr: []string{"did you mean xx-lab-1?"}},
		{name: "syntactically fine typo of an allowed region", settings: listed, field: "us-wset-2", wantErr: []string{"not allowed", "did you mean us-west-2?"}},
		{name: "allowed region as near as one not allowed", settings: listed, field: "us-west-3", wantErr: []string{"not allowed", "did you mean us-west-2?"}},
		{name: "too long", settings: open, field: strings.Repeat("us-east-1,", 300), wantErr: []string{"region is", "bytes long"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRegions("A", tc.field, regionSettings(t, tc.settings))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				if !backend.IsDownstreamError(err) {
					t.Errorf("%v is not a downstream error", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// The default allowed set: the default region, the PromQL regions of its partition and the
// regionEndpoints keys; a configured list replaces the PromQL regions.
func TestAllowed(t *testing.T) {
	s := regionSettings(t, `{"defaultRegion":"us-east-1"}`)
	if got := s.Allowed(); !slices.Equal(got, awsauth.PromQLRegions) {
		t.Errorf("got %v", got)
	}
	s = regionSettings(t, `{"defaultRegion":"cn-north-1","regionEndpoints":{"cn-northwest-1":"http://127.0.0.1:1"}}`)
	if got := s.Allowed(); !slices.Equal(got, []string{"cn-north-1", "cn-northwest-1"}) {
		t.Errorf("china: got %v", got)
	}
	s = regionSettings(t, `{"defaultRegion":"us-east-1","allowedRegions":"eu-west-1, ap-south-1"}`)
	if got := s.Allowed(); !slices.Equal(got, []string{"ap-south-1", "eu-west-1", "us-east-1"}) {
		t.Errorf("list as a string: got %v", got)
	}
	s = regionSettings(t, `{"url":"","defaultRegion":""}`)
	s.Auth.DatasourceURL = "https://monitoring.eu-west-1.amazonaws.com"
	if s.DefaultRegion() != "eu-west-1" || !slices.Contains(s.Allowed(), "eu-west-1") {
		t.Errorf("the region of the datasource URL is the default: %q", s.DefaultRegion())
	}
}

// Random region lists (valid, duplicated, invalid, other case, blank, not allowed), checked
// against a model of the rules written independently of the parser.
func TestParseRegionsRandom(t *testing.T) {
	s := regionSettings(t, `{"defaultRegion":"us-east-1","allowedRegions":["us-west-2","eu-west-1","ap-south-1"]}`)
	allowed := map[string]bool{"us-east-1": true, "us-west-2": true, "eu-west-1": true, "ap-south-1": true}
	pool := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-south-1", // allowed
		"sa-east-1", "ca-central-1", // valid, not allowed
		"US-WEST-2", "Eu-West-1", "us-west2", "useast-1", "$region", "eu west 1", "us-east-1;", // not names
		"", " ", " us-west-2 ", "\tap-south-1"} // blanks and padding
	rng := rand.New(rand.NewPCG(15, 42))
	for i := range 2000 {
		items := make([]string, rng.IntN(6))
		for j := range items {
			items[j] = pool[rng.IntN(len(pool))]
		}
		field := strings.Join(items, ",")
		if rng.IntN(5) == 0 {
			field = "{" + field + "}"
		}
		got, err := ParseRegions("A", field, s)

		// The model: first bad item (in order) decides the error; else distinct trimmed items.
		var want []string
		wantErr := ""
		for _, it := range items {
			it = strings.TrimSpace(it)
			if it == "" || slices.Contains(want, it) {
				continue
			}
			isName := it == strings.ToLower(it) && !strings.ContainsAny(it, " $;") && strings.Count(it, "-") >= 2
			switch {
			case !isName:
				wantErr = fmt.Sprintf("region %q is not an AWS region name", it)
			case !allowed[it]:
				wantErr = fmt.Sprintf("region %q is not allowed", it)
			}
			if wantErr != "" {
				break
			}
			want = append(want, it)
		}
		if wantErr == "" && len(want) == 0 {
			want = []string{"us-east-1"}
		}
		switch {
		case wantErr != "":
			if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.HasPrefix(err.Error(), "query A: ") {
				t.Fatalf("case %d %q: got %v, %v; want an error with %q", i, field, got, err, wantErr)
			}
		case err != nil || !slices.Equal(got, want):
			t.Fatalf("case %d %q: got %v, %v; want %v", i, field, got, err, want)
		}
	}
}

func TestRegionSettingsErrors(t *testing.T) {
	tests := []struct {
		name, json string
		wantErr    []string
	}{
		{name: "allowed not a name", json: `{"defaultRegion":"us-east-1","allowedRegions":["us-east-1","euwest-1"]}`, wantErr: []string{"jsonData.allowedRegions", `"euwest-1"`, "did you mean eu-west-1?"}},
		{name: "allowed wrong type", json: `{"defaultRegion":"us-east-1","allowedRegions":{"a":1}}`, wantErr: []string{"jsonData.allowedRegions must be a list of region names"}},
		{name: "endpoint key not a region", json: `{"defaultRegion":"us-east-1","regionEndpoints":{"west":"http://127.0.0.1:1"}}`, wantErr: []string{"jsonData.regionEndpoints", `"west"`}},
		{name: "endpoint empty", json: `{"defaultRegion":"us-east-1","regionEndpoints":{"us-west-2":" "}}`, wantErr: []string{`jsonData.regionEndpoints["us-west-2"] is empty`}},
		{name: "endpoint unsafe", json: `{"defaultRegion":"us-east-1","regionEndpoints":{"us-west-2":"http://203.0.113.9"}}`, wantErr: []string{`jsonData.regionEndpoints["us-west-2"]`, "plain http"}},
		{name: "endpoints wrong type", json: `{"defaultRegion":"us-east-1","regionEndpoints":["http://127.0.0.1:1"]}`, wantErr: []string{`"regionEndpoints"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: json.RawMessage(tc.json)})
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Every query type reads the region field the same way.
func TestQueryRegionField(t *testing.T) {
	for _, tc := range []struct{ js, want string }{
		{`{}`, ""}, {`{"region":"us-west-2"}`, "us-west-2"}, {`{"region":["us-west-2","eu-west-1"]}`, "us-west-2,eu-west-1"}, {`{"region":null}`, ""},
	} {
		dq := backend.DataQuery{RefID: "A", JSON: json.RawMessage(tc.js)}
		got, err := QueryRegion(dq)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.js, got, err, tc.want)
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(tc.js), &m)
		m["expr"] = "up"
		withExpr, _ := json.Marshal(m)
		q, err := ParseQuery(backend.DataQuery{RefID: "A", JSON: withExpr})
		if err != nil || q.Region != tc.want {
			t.Errorf("ParseQuery %s: got %+v, %v", tc.js, q, err)
		}
		h, err := ParseHealthQuery(dq, QueryTypeAlarms)
		if err != nil || h.Region != tc.want {
			t.Errorf("ParseHealthQuery %s: got %+v, %v", tc.js, h, err)
		}
	}
	if _, err := QueryRegion(backend.DataQuery{RefID: "B", JSON: json.RawMessage(`{"region":7}`)}); err == nil || !strings.Contains(err.Error(), `query B: field "region"`) {
		t.Errorf("a number: %v", err)
	}
}

// Whatever the field, ParseRegions answers regions that are distinct and allowed, or an
// error naming the region field's problem; it never panics.
func FuzzParseRegions(f *testing.F) {
	for _, seed := range []string{"", "us-east-1", "{us-east-1,eu-west-1}", "US-EAST-1,$region", " , ,us-west-2,us-west-2", "eu-west-1\x00", "ü-west-1"} {
		f.Add(seed)
	}
	s, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: json.RawMessage(`{"defaultRegion":"us-east-1"}`)})
	if err != nil {
		f.Fatal(err)
	}
	allowed := s.Allowed()
	f.Fuzz(func(t *testing.T, field string) {
		got, err := ParseRegions("A", field, s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "query A: region") || !backend.IsDownstreamError(err) {
				t.Fatalf("%q: error %v", field, err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("%q: no region and no error", field)
		}
		for i, r := range got {
			if !slices.Contains(allowed, r) || slices.Contains(got[:i], r) {
				t.Fatalf("%q: got %v", field, got)
			}
		}
	})
}
