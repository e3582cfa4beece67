package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// startTwo serves fleet.TwoRegions with per-region listeners; us-east-1 plays iceScenario.
func startTwo(t *testing.T, eastScenario string) *Multi {
	t.Helper()
	fs := fleet.TwoRegions()
	m, err := StartRegions(context.Background(), MultiOptions{
		Options:         Options{Seed: 3, History: time.Hour, End: PinnedEnd},
		Regions:         []Region{{Fleet: fs[0], Scenario: eastScenario}, {Fleet: fs[1]}},
		RegionListeners: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// answer is one HTTP exchange's outcome.
type answer struct {
	status int
	body   []byte
}

// send posts body to base+path signed for region and service with the stack's keys.
func send(t *testing.T, m *Multi, base, region, service, path, body string, header http.Header) answer {
	t.Helper()
	c := &http.Client{Transport: awsauth.NewSigner(http.DefaultTransport,
		credentials.NewStaticCredentialsProvider(m.AccessKey, m.SecretKey, ""), region, service, nil)}
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, b}
}

// instantQuery posts an instant PromQL query at the end of the history signed for region.
func instantQuery(t *testing.T, m *Multi, base, region, expr string) answer {
	t.Helper()
	form := url.Values{"query": {expr}, "time": {strconv.FormatInt(m.End.Unix(), 10)}}
	return send(t, m, base, region, awsauth.SigningService, "/api/v1/query", form.Encode(), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
}

// regionAccounts asks base, signed for region, which (region, account) pairs the node series
// have, with the number of instances of each.
func regionAccounts(t *testing.T, m *Multi, base, region string) (map[string]int, answer) {
	t.Helper()
	a := instantQuery(t, m, base, region, `count by ("@aws.region", "@aws.account") (node_memory_MemTotal_bytes)`)
	if a.status != http.StatusOK {
		return nil, a
	}
	got := map[string]int{}
	for _, r := range decodeVector(t, a.body) {
		got[r.Metric[sc.LabelRegion]+"/"+r.Metric[sc.LabelAccount]] = int(r.value(t))
	}
	return got, a
}

// wantLayout is what regionAccounts should find for f.
func wantLayout(f *fleet.Fleet) map[string]int {
	want := map[string]int{}
	for i := range f.Endpoints {
		want[f.Region+"/"+f.AccountOf(&f.Endpoints[i])] += f.Endpoints[i].InstanceCount()
	}
	return want
}

// authError decodes an AWS JSON error body.
func authError(t *testing.T, a answer) (typ, msg string) {
	t.Helper()
	var body struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(a.body, &body); err != nil {
		t.Fatalf("HTTP %d body is not an AWS JSON error: %s", a.status, a.body)
	}
	return body.Type, body.Message
}

func counts(m *Multi) map[string]Counts {
	out := map[string]Counts{}
	for _, st := range m.Regions {
		out[st.Region] = st.Counts()
	}
	return out
}

// The router answers each request as the region it is signed for, verifies it there, and
// refuses a region it does not serve without any region seeing the request.
func TestRouterAnswersTheRegionOfTheSignature(t *testing.T) {
	m := startTwo(t, "healthy")
	fs := fleet.TwoRegions()
	for i, region := range []string{"us-east-1", "us-west-2"} {
		before := counts(m)
		got, a := regionAccounts(t, m, m.URL, region)
		if a.status != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", region, a.status, a.body)
		}
		if want := wantLayout(fs[i]); !maps.Equal(got, want) {
			t.Errorf("%s: instances by region/account %v, want %v", region, got, want)
		}
		after := counts(m)
		for _, r := range m.Names() {
			d := Counts{after[r].Received - before[r].Received, after[r].Verified - before[r].Verified, after[r].Refused - before[r].Refused}
			want := Counts{}
			if r == region {
				want = Counts{Received: 1, Verified: 1}
			}
			if d != want {
				t.Errorf("query signed for %s: %s counted %+v, want %+v", region, r, d, want)
			}
		}
	}

	before, unrouted := counts(m), m.Unrouted()
	for _, tc := range []struct {
		name, region, service, typ, msg string
	}{
		{"unserved region", "eu-west-1", awsauth.SigningService, sigv4verify.TypeInvalidSignature, sigv4verify.MsgWrongRegion},
		{"region name in capitals", "US-EAST-1", awsauth.SigningService, sigv4verify.TypeInvalidSignature, sigv4verify.MsgWrongRegion},
		{"unsigned", "", "", sigv4verify.TypeMissingToken, "Missing Authentication Token"},
	} {
		var a answer
		if tc.region == "" {
			resp, err := http.PostForm(m.URL+"/api/v1/query", url.Values{"query": {"1"}})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			a = answer{resp.StatusCode, body}
		} else {
			_, a = regionAccounts(t, m, m.URL, tc.region)
		}
		typ, msg := authError(t, a)
		if a.status != http.StatusForbidden || typ != tc.typ || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: HTTP %d %s %q, want 403 %s %q", tc.name, a.status, typ, msg, tc.typ, tc.msg)
		}
	}
	if got := counts(m); !maps.Equal(got, before) {
		t.Errorf("refused requests reached a region: counts %v, before %v", got, before)
	}
	if m.Routed() != 2 {
		t.Errorf("Routed = %d, want the 2 served queries", m.Routed())
	}
	if got := m.Unrouted() - unrouted; got != 3 {
		t.Errorf("Unrouted grew by %d, want 3", got)
	}
}

// A region's own listener answers only requests signed for it: another served region's
// signature is refused there (and counted as refused by that region, not the other).
func TestRegionListenersRefuseOtherRegions(t *testing.T) {
	m := startTwo(t, "healthy")
	east, west := m.Region("us-east-1"), m.Region("us-west-2")
	if east.URL == "" || west.URL == "" || east.URL == west.URL || east.URL == m.URL {
		t.Fatalf("listeners: router %s, east %q, west %q", m.URL, east.URL, west.URL)
	}
	got, a := regionAccounts(t, m, west.URL, "us-west-2")
	if a.status != http.StatusOK || !maps.Equal(got, wantLayout(fleet.TwoRegions()[1])) {
		t.Fatalf("west on its listener: HTTP %d %v", a.status, got)
	}
	_, a = regionAccounts(t, m, east.URL, "us-west-2")
	if typ, msg := authError(t, a); a.status != http.StatusForbidden || typ != sigv4verify.TypeInvalidSignature || msg != sigv4verify.MsgWrongRegion {
		t.Errorf("west signature on east's listener: HTTP %d %s %q, want the wrong-region 403", a.status, typ, msg)
	}
	if c := east.Counts(); c != (Counts{Received: 1, Refused: 1}) {
		t.Errorf("east counts %+v, want one received and refused", c)
	}
	if c := west.Counts(); c != (Counts{Received: 1, Verified: 1}) {
		t.Errorf("west counts %+v, want one received and verified", c)
	}
	if n := m.Routed() + m.Unrouted(); n != 0 {
		t.Errorf("the router saw %d requests sent to the regions' own listeners", n)
	}
}

// SageMaker calls go to the region they are signed for too, and a region not served gets
// the error in SageMaker's JSON protocol.
func TestRouterRoutesControlPlaneCalls(t *testing.T) {
	m := startTwo(t, "healthy")
	list := func(region string) answer {
		return send(t, m, m.URL, region, "sagemaker", "/", "{}",
			http.Header{"X-Amz-Target": {"SageMaker.ListEndpoints"}, "Content-Type": {"application/x-amz-json-1.1"}})
	}
	for i, f := range fleet.TwoRegions() {
		a := list(f.Region)
		var out struct {
			Endpoints []struct{ EndpointName, EndpointArn string }
		}
		if err := json.Unmarshal(a.body, &out); a.status != http.StatusOK || err != nil {
			t.Fatalf("%s: HTTP %d %s", f.Region, a.status, a.body)
		}
		var names []string
		for _, e := range out.Endpoints {
			names = append(names, e.EndpointName)
			if !strings.HasPrefix(e.EndpointArn, "arn:aws:sagemaker:"+f.Region+":") {
				t.Errorf("%s: ARN %s is not in the region", f.Region, e.EndpointArn)
			}
		}
		var want []string
		for _, e := range f.Endpoints {
			want = append(want, e.Name)
		}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("region %d %s lists %v, want %v", i, f.Region, names, want)
		}
	}
	before := counts(m)
	a := list("ap-south-1")
	if typ, _ := authError(t, a); a.status != http.StatusForbidden || !strings.Contains(typ, sigv4verify.TypeInvalidSignature) {
		t.Errorf("unserved region: HTTP %d %s", a.status, a.body)
	}
	if !maps.Equal(counts(m), before) || m.Unrouted() != 1 {
		t.Errorf("the refused call reached a region: %v (before %v), unrouted %d", counts(m), before, m.Unrouted())
	}
}

// Random layouts (fixed seeds): one to three regions drawn from a list, each endpoint in a
// drawn account; every region answers with exactly its own instances by account.
func TestRandomRegionAccountLayouts(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills several regions")
	}
	names := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1", "sa-east-1"}
	accounts := []string{"111111111111", "222222222222", "333333333333"}
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var regions []Region
		for _, i := range rng.Perm(len(names))[:1+rng.IntN(3)] {
			f := fleet.Default().InRegion(names[i], "")
			for j := range f.Endpoints {
				f.Endpoints[j].Account = accounts[rng.IntN(len(accounts))]
			}
			regions = append(regions, Region{Fleet: f})
		}
		var drawn []string
		for _, r := range regions {
			drawn = append(drawn, r.Fleet.Region+fmt.Sprint(r.Fleet.Accounts()))
		}
		t.Run(fmt.Sprintf("seed %d %s", seed, strings.Join(drawn, " ")), func(t *testing.T) {
			m, err := StartRegions(context.Background(), MultiOptions{Options: Options{History: 10 * time.Minute, End: PinnedEnd}, Regions: regions})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for _, r := range regions {
				got, a := regionAccounts(t, m, m.URL, r.Fleet.Region)
				if want := wantLayout(r.Fleet); a.status != http.StatusOK || !maps.Equal(got, want) {
					t.Errorf("%s: HTTP %d, got %v, want %v", r.Fleet.Region, a.status, got, want)
				}
			}
			for _, st := range m.Regions {
				if c := st.Counts(); c != (Counts{Received: 1, Verified: 1}) {
					t.Errorf("%s counted %+v, want its one request", st.Region, c)
				}
			}
		})
	}
}

// The ICE scenario in one region gives ICE events in every zone of that region and none in
// the other: the cross-region finding's input.
func TestICEInEveryZoneOfOneRegionOnly(t *testing.T) {
	m := startTwo(t, "ice-exhaustion")
	for _, f := range fleet.TwoRegions() {
		a := instantQuery(t, m, m.URL, f.Region, `count by ("`+sc.LabelEventAZ+`") (max_over_time(`+sc.ICECount+`[1h]))`)
		if a.status != http.StatusOK {
			t.Fatalf("%s: HTTP %d %s", f.Region, a.status, a.body)
		}
		var zones []string
		for _, r := range decodeVector(t, a.body) {
			zones = append(zones, r.Metric[sc.LabelEventAZ])
		}
		slices.Sort(zones)
		want := f.AZs()
		if f.Region != "us-east-1" {
			want = nil
		}
		if !slices.Equal(zones, want) {
			t.Errorf("%s: ICE in zones %v, want %v", f.Region, zones, want)
		}
	}
}

func TestStartRegionsRejectsBadOptions(t *testing.T) {
	fs := fleet.TwoRegions()
	// Each is an *OptionError naming its flag; want tells the problems of one flag apart, and
	// a region's own option problem says which region it is about.
	for _, o := range []struct {
		opts         MultiOptions
		option, want string
	}{
		{MultiOptions{}, "region", "no regions"},
		{MultiOptions{Options: Options{Region: "us-east-1"}, Regions: []Region{{}}}, "region", "leave Options.Region and Options.Fleet empty"},
		{MultiOptions{Regions: []Region{{Name: "us-east-1"}, {Fleet: fs[0]}}}, "region", "us-east-1 is named twice"},
		{MultiOptions{Regions: []Region{{Name: "us-west-2", Fleet: fs[0]}}}, "region", "was given a fleet of us-east-1"},
		{MultiOptions{Regions: []Region{{Name: "us-east1"}}}, "region", `"us-east1" is not an AWS region name`},
		{MultiOptions{Regions: []Region{{Name: "eu-west-1", Scenario: "meltdown"}}}, "scenario", `region eu-west-1: unknown scenario "meltdown"`},
		{MultiOptions{Options: Options{Addr: "0.0.0.0:0"}, Regions: []Region{{}}}, "addr", "not a loopback address"},
	} {
		m, err := StartRegions(context.Background(), o.opts)
		if m != nil {
			m.Close()
		}
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != o.option || !strings.Contains(err.Error(), o.want) {
			t.Errorf("StartRegions(%+v) = %v, want an OptionError of %s containing %q", o.opts, err, o.option, o.want)
		}
	}
}

// The settings load with the plugin's own loader: default region, the router as endpoint,
// keys, allowed regions, and an endpoint for each region with its own listener.
func TestMultiDataSourceSettings(t *testing.T) {
	m := &Multi{URL: "http://127.0.0.1:9", AccessKey: "AKIAEXAMPLE", SecretKey: "secret", Step: time.Minute,
		Regions: []*Stack{{Region: "us-west-2", URL: "http://127.0.0.1:10"}, {Region: "eu-west-1"}}}
	jd, secure := m.DataSourceSettings()
	s := loadSettings(t, jd, secure)
	if s.Auth.Region != "us-west-2" || s.Auth.Endpoint != m.URL || s.Auth.AccessKey.Reveal() != m.AccessKey {
		t.Errorf("loaded settings %+v do not match", s)
	}
	if !slices.Equal(s.AllowedRegions, []string{"us-west-2", "eu-west-1"}) {
		t.Errorf("allowedRegions %v", s.AllowedRegions)
	}
	if eps := s.Auth.RegionEndpoints; len(eps) != 1 || eps["us-west-2"] != "http://127.0.0.1:10" {
		t.Errorf("regionEndpoints %v: want only the region with a listener", eps)
	}
}

func TestRegionName(t *testing.T) {
	for s, want := range map[string]bool{
		"us-east-1": true, "us-gov-west-1": true, "ap-southeast-4": true, "cn-north-1": true,
		"us-east1": false, "US-EAST-1": false, "us-east-": false, "-east-1": false, "us-east-1a": false, "": false, "$region": false,
	} {
		if got := regionName(s); got != want {
			t.Errorf("regionName(%q) = %v, want %v", s, got, want)
		}
	}
}

// Live regions keep appending, each into its own TSDB, until Close.
func TestLiveRegionsAppendNewSamples(t *testing.T) {
	m, err := StartRegions(context.Background(), MultiOptions{
		Options: Options{History: 5 * time.Minute, Step: time.Second, Live: true},
		Regions: []Region{{Name: "us-east-1"}, {Name: "eu-west-1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, st := range m.Regions {
		deadline := time.Now().Add(10 * time.Second)
		for st.DB.Head().MaxTime() <= st.End.UnixMilli() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no live sample after the history end %v", st.Region, st.End)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := m.Close(); err != nil {
		t.Errorf("live simulators stopped with %v", err)
	}
}

// TestAccountLimitsAcrossRegionsAndStacks: with one Accounts registry, the monitoring
// account's discovery rate is spent once across both regions of a multi-region stack and a
// second stack of the same account; without it each region has its own. A rate of one call
// per 1000 s makes the second call in a run over the limit whatever the machine's speed.
func TestAccountLimitsAcrossRegionsAndStacks(t *testing.T) {
	cases := []struct {
		name     string
		accounts *emulator.Accounts
		want     []int // the two regions through the router, then the second stack
	}{
		{"one account", &emulator.Accounts{}, []int{200, 422, 422}},
		{"gates per region", nil, []int{200, 200, 200}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := fleet.TwoRegions()
			base := Options{History: 10 * time.Minute, End: PinnedEnd, Limits: emulator.Limits{DiscoveryTPS: 0.001}, Accounts: tc.accounts}
			m, err := StartRegions(context.Background(), MultiOptions{Options: base, Regions: []Region{{Fleet: fs[0]}, {Fleet: fs[1]}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close() })
			second := base
			second.Fleet, second.AccessKey, second.SecretKey = fs[0], m.AccessKey, m.SecretKey
			st, err := Start(context.Background(), second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })

			form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			got := []int{
				send(t, m, m.URL, m.Regions[0].Region, awsauth.SigningService, "/api/v1/labels", "", form).status,
				send(t, m, m.URL, m.Regions[1].Region, awsauth.SigningService, "/api/v1/labels", "", form).status,
				send(t, m, st.URL, st.Region, awsauth.SigningService, "/api/v1/labels", "", form).status,
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("answers %v, want %v", got, tc.want)
			}
			accts := []*emulator.Account{m.Regions[0].Account(), m.Regions[1].Account(), st.Account()}
			if tc.accounts == nil {
				for i, a := range accts {
					if c := a.Counts(); c != (emulator.AccountCounts{Discovery: emulator.ClassCounts{Admitted: 1}}) {
						t.Errorf("gates %d counted %+v, want its one call admitted", i, c)
					}
				}
				return
			}
			shared := tc.accounts.Account(fleet.MonitoringAccount)
			for i, a := range accts {
				if a != shared {
					t.Errorf("stack %d does not enforce the registry's gates of %s", i, fleet.MonitoringAccount)
				}
			}
			if c := shared.Counts(); c != (emulator.AccountCounts{Discovery: emulator.ClassCounts{Admitted: 1, Throttled: 2}}) {
				t.Errorf("the account counted %+v, want 1 admitted and 2 throttled", c)
			}
		})
	}
}
