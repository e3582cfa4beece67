package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// regionFakes is a ClientFactory handing each region its own fakeUpstream (made by mk) and
// recording what every build was given.
type regionFakes struct {
	mu     sync.Mutex
	mk     func(region string) *fakeUpstream
	fakes  map[string]*fakeUpstream
	builds map[string]int
	shared []Shared
}

func (r *regionFakes) factory(_ context.Context, _ *models.Settings, ep awsauth.Endpoint, sh Shared) (Upstream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fakes == nil {
		r.fakes, r.builds = map[string]*fakeUpstream{}, map[string]int{}
	}
	r.builds[ep.Region]++
	r.shared = append(r.shared, sh)
	f := r.mk(ep.Region)
	r.fakes[ep.Region] = f
	return f, nil
}

func (r *regionFakes) calls() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for region, f := range r.fakes {
		if n := len(f.Calls()); n > 0 {
			out[region] = n
		}
	}
	return out
}

// regionMatrix answers each region with one series lacking @aws.region, whose value tells
// the regions apart, and one series that carries its own @aws.region.
func regionMatrix(region string) *fakeUpstream {
	v := regionValue(region)
	return &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
		switch c.op {
		case "query_range":
			return okJSON(fmt.Sprintf(`{"status":"success","data":{"resultType":"matrix","result":[
				{"metric":{"__name__":"up","job":"a"},"values":[[1780660800,"%d"]]},
				{"metric":{"__name__":"up","job":"b","@aws.region":"elsewhere-1"},"values":[[1780660800,"0"]]}]}}`, v)), nil
		case "query":
			return okJSON(fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1780664407,"%d"]}]}}`, v)), nil
		}
		return okJSON(`{"status":"success","data":["a"]}`), nil
	}}
}

// regionValue tells the regions used in these tests apart.
func regionValue(region string) int {
	v := 0
	for _, c := range region {
		v = v*31 + int(c)
	}
	return v % 100000
}

func newRegionDatasource(t *testing.T, jsonData string, r *regionFakes) *Datasource {
	t.Helper()
	if jsonData == "" {
		jsonData = `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9"}`
	}
	d, err := New(context.Background(), testSettings(jsonData), r.factory,
		WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (awsapi.API, error) {
			return &fakeAWS{}, nil
		}))
	if err != nil || d.setupErr != nil {
		t.Fatalf("%v %v", err, d.setupErr)
	}
	t.Cleanup(d.Dispose)
	return d
}

func queryData(t *testing.T, d *Datasource, model string) backend.DataResponse {
	t.Helper()
	resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{dataQuery("A", model)}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Responses["A"]
}

// frameRegions lists, per value field, the @aws.region label and the display name.
func frameRegions(frames data.Frames) (regions, names []string) {
	for _, f := range frames {
		for _, fld := range f.Fields {
			if fld.Type() == data.FieldTypeTime {
				continue
			}
			regions = append(regions, fld.Labels[semconv.LabelRegion])
			if fld.Config != nil {
				names = append(names, fld.Config.DisplayNameFromDS)
			}
		}
	}
	return regions, names
}

// regionOrder is the order in which the regions' own series (those regionMatrix leaves
// without the label) appear, each region once.
func regionOrder(frames data.Frames) []string {
	regions, _ := frameRegions(frames)
	var out []string
	for _, r := range regions {
		if r != "elsewhere-1" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// A bad, mistyped or not allowed region gets the clear error (400, downstream) and sends
// nothing, in a query and in a resource call.
func TestBadRegionSendsNothing(t *testing.T) {
	// eu-west-1 has an endpoint but is not listed: the endpoint does not make it allowed.
	listed := `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","allowedRegions":["us-west-2"],
		"regionEndpoints":{"eu-west-1":"http://127.0.0.1:8"}}`
	tests := []struct {
		name, settings, region string
		want                   []string
	}{
		{name: "mistyped", region: "us-east1", want: []string{`query A: region "us-east1" is not an AWS region name`, "did you mean us-east-1?"}},
		{name: "upper case", region: "us-west-2,US-EAST-1", want: []string{`"US-EAST-1"`, "did you mean us-east-1?"}},
		{name: "variable not replaced", region: "$region", want: []string{"dashboard variable was not replaced"}},
		{name: "not allowed", settings: listed, region: "us-west-2,eu-west-1", want: []string{`region "eu-west-1" is not allowed by this data source`, "jsonData.allowedRegions", "us-east-1, us-west-2"}},
		{name: "unknown region", region: "us-east-9", want: []string{"not allowed", "did you mean us-east-1?"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &regionFakes{mk: regionMatrix}
			d := newRegionDatasource(t, tc.settings, r)
			dr := queryData(t, d, `{"expr":"up","region":"`+tc.region+`"}`)
			if dr.Error == nil || dr.Status != backend.StatusBadRequest || dr.ErrorSource != backend.ErrorSourceDownstream {
				t.Fatalf("got %v (status %d, source %s), want a 400 downstream error", dr.Error, dr.Status, dr.ErrorSource)
			}
			for _, w := range tc.want {
				if !strings.Contains(dr.Error.Error(), w) {
					t.Errorf("error %q lacks %q", dr.Error, w)
				}
			}
			res := getResource(t, d, "api/v1/labels?region="+strings.ReplaceAll(tc.region, "$", "%24"))
			if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "parameter region") {
				t.Errorf("resource: %d %s", res.Status, res.Body)
			}
			if c := r.calls(); len(c) != 0 {
				t.Errorf("calls sent: %v", c)
			}
			if r.builds["us-east-1"] != 1 || len(r.builds) != 1 {
				t.Errorf("clients built: %v, want the default region's only", r.builds)
			}
		})
	}
}

// getResource is a GET of path?query through the existing helper.
func getResource(t *testing.T, d *Datasource, pathAndQuery string) *backend.CallResourceResponse {
	t.Helper()
	path, query, _ := strings.Cut(pathAndQuery, "?")
	return callResource(t, d, resourceCall{method: http.MethodGet, path: path, query: query})
}

// N regions: one call per region, frames in region order, each series labelled with its
// region where it lacks the label, legends formatted after; a query without region gets
// its series unlabelled.
func TestFanOutMergesRegions(t *testing.T) {
	r := &regionFakes{mk: regionMatrix}
	d := newRegionDatasource(t, "", r)
	dr := queryData(t, d, `{"expr":"up","legendFormat":"{{job}} {{@aws.region}}","region":"us-west-2, eu-central-1,us-west-2"}`)
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	if c := r.calls(); len(c) != 2 || c["us-west-2"] != 1 || c["eu-central-1"] != 1 {
		t.Errorf("calls %v, want one per region", c)
	}
	if got := regionOrder(dr.Frames); !slices.Equal(got, []string{"us-west-2", "eu-central-1"}) {
		t.Errorf("regions in order %v, want us-west-2 then eu-central-1", got)
	}
	regions, names := frameRegions(dr.Frames)
	slices.Sort(regions)
	slices.Sort(names)
	wantRegions := []string{"elsewhere-1", "elsewhere-1", "eu-central-1", "us-west-2"}
	wantNames := []string{"a eu-central-1", "a us-west-2", "b elsewhere-1", "b elsewhere-1"}
	if !slices.Equal(regions, wantRegions) || !slices.Equal(names, wantNames) {
		t.Errorf("regions %v names %v, want %v %v", regions, names, wantRegions, wantNames)
	}
	for _, f := range dr.Frames {
		if f.RefID != "A" {
			t.Errorf("frame refId %q", f.RefID)
		}
	}

	plain := queryData(t, d, `{"expr":"up","legendFormat":"{{job}} {{@aws.region}}"}`)
	regions, _ = frameRegions(plain.Frames)
	slices.Sort(regions)
	if plain.Error != nil || !slices.Equal(regions, []string{"", "elsewhere-1"}) {
		t.Errorf("no region field: %v, regions %v", plain.Error, regions)
	}
	if c := r.calls(); c["us-east-1"] != 1 {
		t.Errorf("the default region answers a query without region: %v", c)
	}
}

// A region that fails is named in the error, the other regions' frames are kept; a panic in
// one region's half stays that region's error.
func TestFailingRegionKeepsOthers(t *testing.T) {
	r := &regionFakes{mk: func(region string) *fakeUpstream {
		f := regionMatrix(region)
		switch region {
		case "eu-west-1":
			f.answer = func(call) (*fakeResponse, error) {
				return nil, &promclient.APIError{Status: 400, Type: "bad_data", Message: "parse error at char 3"}
			}
		case "ap-south-1":
			f.answer = func(call) (*fakeResponse, error) { panic("fake upstream exploded") }
		}
		return f
	}}
	d := newRegionDatasource(t, "", r)
	for _, tc := range []struct {
		name, region string
		want         []string
		regions      []string
		status       backend.Status // the first failing region's
		source       backend.ErrorSource
	}{
		{name: "error", region: "us-west-2,eu-west-1,us-east-1", want: []string{"region eu-west-1: "}, regions: []string{"us-west-2", "us-east-1"},
			status: backend.StatusBadRequest, source: backend.ErrorSourceDownstream},
		{name: "panic", region: "ap-south-1,us-west-2", want: []string{"region ap-south-1: "}, regions: []string{"us-west-2"},
			status: backend.StatusInternal, source: backend.ErrorSourcePlugin},
		{name: "all fail", region: "eu-west-1,ap-south-1", want: []string{"region eu-west-1: ", "; region ap-south-1: "},
			status: backend.StatusBadRequest, source: backend.ErrorSourceDownstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dr := queryData(t, d, `{"expr":"up","range":true,"instant":true,"region":"`+tc.region+`"}`)
			if dr.Error == nil {
				t.Fatal("want an error")
			}
			if dr.Status != tc.status || dr.ErrorSource != tc.source {
				t.Errorf("status %d source %q, want %d %q", dr.Status, dr.ErrorSource, tc.status, tc.source)
			}
			for _, w := range tc.want {
				if !strings.Contains(dr.Error.Error(), w) {
					t.Errorf("error %q lacks %q", dr.Error, w)
				}
			}
			if got := regionOrder(dr.Frames); !slices.Equal(got, tc.regions) {
				t.Errorf("frames of regions %v, want %v", got, tc.regions)
			}
		})
	}
}

// Each region's answers have their own cache keys: the same expression in another region
// goes upstream and shows that region's values.
func TestRegionCacheIsolation(t *testing.T) {
	r := &regionFakes{mk: regionMatrix}
	d := newRegionDatasource(t, `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","cacheSizeMiB":16}`, r)
	values := func(dr backend.DataResponse) []float64 {
		var out []float64
		for _, f := range dr.Frames {
			if len(f.Fields) > 1 && f.Fields[1].Len() > 0 && f.Fields[1].Labels[semconv.LabelRegion] != "elsewhere-1" {
				v, _ := f.Fields[1].ConcreteAt(0)
				out = append(out, v.(float64))
			}
		}
		return out
	}
	model := func(region string) string { return `{"expr":"up","region":"` + region + `"}` }
	first := values(queryData(t, d, model("us-west-2")))
	again := values(queryData(t, d, model("us-west-2")))
	other := values(queryData(t, d, model("eu-west-2")))
	home := values(queryData(t, d, `{"expr":"up"}`))
	if c := r.calls(); c["us-west-2"] != 1 || c["eu-west-2"] != 1 || c["us-east-1"] != 1 {
		t.Errorf("upstream calls %v: want us-west-2 once (then cached), eu-west-2 and us-east-1 once each", c)
	}
	if !slices.Equal(first, again) || slices.Equal(first, other) || len(other) != 1 || other[0] != float64(regionValue("eu-west-2")) || slices.Equal(home, first) {
		t.Errorf("values us-west-2 %v/%v, eu-west-2 %v, default %v", first, again, other, home)
	}
}

// Clients are built once per region however many queries ask at once; every region gets
// the one credentials provider.
func TestRegionalBuiltOnceAndShared(t *testing.T) {
	r := &regionFakes{mk: regionMatrix}
	d := newRegionDatasource(t, "", r)
	var wg sync.WaitGroup
	got := make([]*regional, 40)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			region := []string{"us-west-2", "eu-west-1", "us-east-1", ""}[i%4]
			rg, err := d.regional(context.Background(), region)
			if err != nil {
				t.Error(err)
			}
			got[i] = rg
		}()
	}
	wg.Wait()
	if r.builds["us-west-2"] != 1 || r.builds["eu-west-1"] != 1 || r.builds["us-east-1"] != 1 {
		t.Errorf("builds %v, want one per region", r.builds)
	}
	if got[0] != got[4] || got[0] == got[1] || got[2] != got[3] || got[2] != d.home {
		t.Error("one regional per region, the default region's being home")
	}
	for _, sh := range r.shared {
		if sh.Creds != r.shared[0].Creds || sh.Creds == nil {
			t.Fatal("regions do not share the credentials provider")
		}
	}
	if _, err := d.regional(context.Background(), "us-gov-west-1"); !backend.IsDownstreamError(err) || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("a region not allowed: %v", err)
	}
	if _, ok := r.builds["us-gov-west-1"]; ok {
		t.Error("a client was built for a region not allowed")
	}
}

// Resource calls go to the region they name (the first when several), and cache per region.
func TestResourceRegion(t *testing.T) {
	r := &regionFakes{mk: regionMatrix}
	d := newRegionDatasource(t, `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","cacheSizeMiB":16}`, r)
	for _, p := range []string{"api/v1/labels?region=eu-west-1", "api/v1/labels?region=eu-west-1", "api/v1/labels", "api/v1/label/job/values?region=us-west-2,eu-west-1", "api/v1/series?match[]=up&region=ap-south-1"} {
		if res := getResource(t, d, p); res.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, res.Status, res.Body)
		}
	}
	want := map[string]int{"eu-west-1": 1, "us-east-1": 1, "us-west-2": 1, "ap-south-1": 1}
	if c := r.calls(); !maps.Equal(c, want) {
		t.Errorf("calls %v, want %v", c, want)
	}
}

// The regions resource lists the allowed regions with SageMaker series, sorted, cached;
// without any it falls back to the configured list and the default region.
func TestRegionsResource(t *testing.T) {
	withData := func(has ...string) func(string) *fakeUpstream {
		return func(region string) *fakeUpstream {
			return &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
				if c.op != "series" || c.limit != 1 {
					return nil, fmt.Errorf("unexpected %s call", c.op)
				}
				if region == "eu-west-1" {
					panic("probe exploded")
				}
				if slices.Contains(has, region) {
					return okJSON(`{"status":"success","data":[{"__name__":"DCGM_FI_DEV_GPU_UTIL"}]}`), nil
				}
				return okJSON(`{"status":"success","data":[]}`), nil
			}}
		}
	}
	listed := `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","allowedRegions":["us-west-2","eu-west-1","ap-south-1"]}`
	for _, tc := range []struct {
		name, settings string
		has            []string
		want           []string
		probes         int
	}{
		{name: "probed", settings: listed, has: []string{"us-west-2", "us-east-1", "sa-east-1"}, want: []string{"us-east-1", "us-west-2"}, probes: 4},
		{name: "none has data, the default kept", settings: listed, want: []string{"ap-south-1", "eu-west-1", "us-east-1", "us-west-2"}, probes: 4},
		{name: "default list", settings: "", has: []string{"sa-east-1", "ca-west-1"}, want: []string{"ca-west-1", "sa-east-1"}, probes: 31},
		{name: "default list, no data", settings: "", want: []string{"us-east-1"}, probes: 31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &regionFakes{mk: withData(tc.has...)}
			d := newRegionDatasource(t, tc.settings, r)
			for range 2 { // the second answer comes from the cache
				res := getResource(t, d, "regions")
				var got []string
				if err := json.Unmarshal(res.Body, &got); err != nil || res.Status != http.StatusOK || !slices.Equal(got, tc.want) {
					t.Fatalf("%d %s, want %v", res.Status, res.Body, tc.want)
				}
			}
			n := 0
			for _, c := range r.calls() {
				n += c
			}
			if n != tc.probes {
				t.Errorf("%d probes, want %d (one per allowed region, once)", n, tc.probes)
			}
		})
	}
}

// signedRegions is an httptest CloudWatch for several regions on one listener: a request
// counts for the region whose verifier accepts its signature.
type signedRegions struct {
	verifiers map[string]*sigv4verify.Verifier
	mu        sync.Mutex
	got       map[string][]string // region → hosts it was sent to
	bad       atomic.Int64
	block     func(region string) // called before answering (limiter test)
	url       string
}

func startSignedRegions(t *testing.T, regions ...string) *signedRegions {
	t.Helper()
	s := &signedRegions{verifiers: map[string]*sigv4verify.Verifier{}, got: map[string][]string{}}
	for _, r := range regions {
		s.verifiers[r] = &sigv4verify.Verifier{Region: r,
			Credentials: map[string]sigv4verify.Credential{fakeAccessKey: {AccessKeyID: fakeAccessKey, SecretAccessKey: fakeSecretKey}}}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		region := ""
		for name, v := range s.verifiers {
			if v.Verify(r) == nil {
				region = name
			}
		}
		if region == "" {
			s.bad.Add(1)
			sigv4verify.WriteAuthError(w, s.verifiers[regions[0]].Verify(r))
			return
		}
		s.mu.Lock()
		s.got[region] = append(s.got[region], r.Host)
		s.mu.Unlock()
		if s.block != nil {
			s.block(region)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"%s"},"values":[[1780660800,"1"]]}]}}`, region)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *signedRegions) hosts() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for k, v := range s.got {
		out[k] = slices.Clone(v)
	}
	return out
}

func realRegionDatasource(t *testing.T, jsonData map[string]any) *Datasource {
	t.Helper()
	jsonData["authType"] = "keys"
	jd, _ := json.Marshal(jsonData)
	return newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{UID: "regions", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{"accessKey": fakeAccessKey, "secretKey": fakeSecretKey}})
}

// Through the production client: N regions → N requests, each signed for its own region
// (checked by the independent verifier) and sent to its region's endpoint, whether every
// region has its own (regionEndpoints) or one endpoint serves all (jsonData.endpoint).
func TestRegionsSignedPerRegion(t *testing.T) {
	west, central := startSignedRegions(t, "us-west-2", "us-east-1"), startSignedRegions(t, "eu-central-1", "us-east-1")
	one := startSignedRegions(t, "us-east-1", "us-west-2", "eu-central-1")
	for _, tc := range []struct {
		name  string
		jd    map[string]any
		check map[*signedRegions]map[string]int
	}{
		{name: "endpoint per region", jd: map[string]any{"defaultRegion": "us-east-1", "endpoint": one.url,
			"regionEndpoints": map[string]string{"us-west-2": west.url, "eu-central-1": central.url}},
			check: map[*signedRegions]map[string]int{west: {"us-west-2": 1}, central: {"eu-central-1": 1}, one: {"us-east-1": 1}}},
		{name: "one endpoint for all", jd: map[string]any{"defaultRegion": "us-east-1", "endpoint": one.url},
			check: map[*signedRegions]map[string]int{one: {"us-east-1": 1, "us-west-2": 1, "eu-central-1": 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[*signedRegions]map[string][]string{}
			for s := range tc.check {
				before[s] = s.hosts()
			}
			d := realRegionDatasource(t, tc.jd)
			dr := queryData(t, d, `{"expr":"up","legendFormat":"{{job}}","region":"us-east-1,us-west-2,eu-central-1"}`)
			if dr.Error != nil {
				t.Fatal(dr.Error)
			}
			regions, names := frameRegions(dr.Frames)
			if want := []string{"us-east-1", "us-west-2", "eu-central-1"}; !slices.Equal(regions, want) || !slices.Equal(names, want) {
				t.Errorf("frames say regions %v, answered by %v; want %v", regions, names, want)
			}
			for s, want := range tc.check {
				got := s.hosts()
				for region, n := range want {
					sent := got[region][len(before[s][region]):]
					if len(sent) != n {
						t.Errorf("%s: %d requests signed for %s, want %d", s.url, len(sent), region, n)
					}
					for _, h := range sent {
						if "http://"+h != s.url {
							t.Errorf("request for %s went to host %s", region, h)
						}
					}
				}
				if s.bad.Load() != 0 {
					t.Errorf("%s: %d requests failed verification", s.url, s.bad.Load())
				}
			}
		})
	}
}

// Each region has its own limiter: with one query slot per region, both regions' requests
// are upstream at once (each held until the other arrives). A shared limiter would keep the
// second waiting until the first gave up.
func TestRegionLimitersIndependent(t *testing.T) {
	s := startSignedRegions(t, "us-east-1", "us-west-2")
	var arrivals sync.WaitGroup
	arrivals.Add(2)
	both := make(chan struct{})
	go func() { arrivals.Wait(); close(both) }()
	s.block = func(string) {
		arrivals.Done()
		select {
		case <-both:
		case <-time.After(20 * time.Second): // liveness bound only: a pass never waits for it
		}
	}
	d := realRegionDatasource(t, map[string]any{"defaultRegion": "us-east-1", "endpoint": s.url, "maxConcurrency": 1, "requestsPerSecond": 1, "queryTimeout": "10s"})
	dr := queryData(t, d, `{"expr":"up","region":"us-east-1,us-west-2"}`)
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	select {
	case <-both:
	default:
		t.Fatal("the two regions' requests were never upstream at once")
	}
	if regions, _ := frameRegions(dr.Frames); !slices.Equal(regions, []string{"us-east-1", "us-west-2"}) {
		t.Errorf("regions %v", regions)
	}
}

// Random region fields (valid, duplicate, invalid, other case, not allowed) through QueryData:
// either every distinct region gets exactly one call and a labelled frame, in order, or the
// query fails naming the first bad item and nothing at all is sent.
func TestRandomRegionFields(t *testing.T) {
	pool := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-south-1", "sa-east-1", // allowed
		"us-gov-west-1", "cn-north-1", // region names, not allowed
		"US-WEST-2", "eu-west1", "$region", "", " "} // not names, blanks
	allowedSet := map[string]bool{"us-east-1": true, "us-west-2": true, "eu-west-1": true, "ap-south-1": true, "sa-east-1": true}
	rng := rand.New(rand.NewPCG(15, 7))
	for i := range 150 {
		items := make([]string, 1+rng.IntN(5))
		for j := range items {
			items[j] = pool[rng.IntN(len(pool))]
		}
		field := strings.Join(items, ",")
		var want []string
		bad := ""
		for _, it := range items {
			it = strings.TrimSpace(it)
			switch {
			case it == "" || slices.Contains(want, it):
			case !allowedSet[it]:
				bad = it
			default:
				want = append(want, it)
			}
			if bad != "" {
				break
			}
		}
		sentTo := want
		if bad == "" && len(want) == 0 { // only blanks: the default region, frames as without a region
			want, sentTo = []string{""}, []string{"us-east-1"}
		}
		r := &regionFakes{mk: regionMatrix}
		d := newRegionDatasource(t, "", r)
		js, _ := json.Marshal(map[string]string{"expr": "up", "region": field})
		dr := queryData(t, d, string(js))
		calls := r.calls()
		if bad != "" {
			if dr.Error == nil || !strings.Contains(dr.Error.Error(), fmt.Sprintf("%q", bad)) || len(calls) != 0 {
				t.Fatalf("case %d %q: error %v, calls %v; want an error naming %q and no call", i, field, dr.Error, calls, bad)
			}
			continue
		}
		if dr.Error != nil || !slices.Equal(regionOrder(dr.Frames), want) || len(calls) != len(sentTo) {
			t.Fatalf("case %d %q: error %v, regions %q, calls %v; want %q", i, field, dr.Error, regionOrder(dr.Frames), calls, want)
		}
		for _, region := range sentTo {
			if calls[region] != 1 {
				t.Fatalf("case %d %q: calls %v, want one per region", i, field, calls)
			}
		}
	}
}

// Cache keys join the region and the expression with a NUL, which an expression may hold:
// the default region's "us-west-2\x00up" must not be served us-west-2's answer to "up".
func TestRegionCacheKeyUnambiguous(t *testing.T) {
	r := &regionFakes{mk: regionMatrix}
	d := newRegionDatasource(t, `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","cacheSizeMiB":16}`, r)
	for _, model := range []string{
		`{"expr":"up","instant":true,"region":"us-west-2"}`,
		`{"expr":"us-west-2\u0000up","instant":true}`,
	} {
		queryData(t, d, model)
	}
	if c := r.calls(); c["us-west-2"] != 1 || c["us-east-1"] != 1 {
		t.Errorf("upstream calls %v: want one in each region (a different expression in another region is never a cache hit)", c)
	}
}

// An unsafe jsonData.endpoint is a settings error even when regionEndpoints gives the
// default region its own endpoint: the other regions would use it, so Save & test must
// say so rather than every query to them failing later.
func TestSharedEndpointCheckedWithRegionEndpoints(t *testing.T) {
	r := &regionFakes{mk: regionMatrix}
	d, err := New(context.Background(), testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://203.0.113.9",
		"regionEndpoints":{"us-east-1":"http://127.0.0.1:9"}}`), r.factory)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Dispose)
	var bad *awsauth.SettingError
	if !errors.As(d.setupErr, &bad) || !slices.Contains(bad.Settings, awsauth.SetEndpoint) {
		t.Errorf("setup error %v, want a settings error naming jsonData.endpoint", d.setupErr)
	}
	if len(r.builds) != 0 {
		t.Errorf("clients built %v", r.builds)
	}
}

// A caller that gives up (Grafana's resource timeout is shorter than a probe of 31 regions
// when some do not answer) does not waste the probe: it runs to its own deadline and the
// next caller gets the list without probing again. Otherwise every refresh restarts the
// probe and none ever finishes.
func TestRegionProbeOutlivesCaller(t *testing.T) {
	release := make(chan struct{})
	r := &regionFakes{mk: func(region string) *fakeUpstream {
		return &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
			if region == "us-west-2" {
				<-release // answers only after the first caller gave up
				return okJSON(`{"status":"success","data":[{"__name__":"DCGM_FI_DEV_GPU_UTIL"}]}`), nil
			}
			return okJSON(`{"status":"success","data":[]}`), nil
		}}
	}}
	d := newRegionDatasource(t, `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","allowedRegions":["us-west-2","eu-west-1"]}`, r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []string)
	go func() { done <- d.regionList(ctx, time.Now()) }()
	for len(r.calls()) < 3 { // every probe started
		time.Sleep(time.Millisecond)
	}
	cancel()
	close(release)
	<-done
	if got := d.regionList(context.Background(), time.Now()); !slices.Equal(got, []string{"us-west-2"}) {
		t.Errorf("next caller got %v, want the finished probe's [us-west-2]", got)
	}
	if c := r.calls(); !maps.Equal(c, map[string]int{"us-east-1": 1, "us-west-2": 1, "eu-west-1": 1}) {
		t.Errorf("probes %v, want one per region (one probe, reused)", c)
	}
}
