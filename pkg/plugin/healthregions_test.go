package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/health"
	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

const (
	eastAccount = "111111111111"
	westAccount = "222222222222"
	bothRegions = `{"region":"us-east-1,us-west-2"}`
)

// newRegionsDatasource builds a datasource (default region us-east-1, one loopback endpoint
// for every region) whose regions each get their own fake AWS API and PromQL upstream; a
// region without a fake AWS API cannot build its client.
func newRegionsDatasource(t *testing.T, aws map[string]*fakeAWS, up map[string]*fakeUpstream) *Datasource {
	t.Helper()
	rf := &regionFakes{mk: func(region string) *fakeUpstream {
		if u := up[region]; u != nil {
			return u
		}
		return &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
			return nil, fmt.Errorf("unexpected PromQL %s call in %s", c.op, region)
		}}
	}}
	d, err := New(context.Background(), testSettings(""), rf.factory,
		WithAWS(func(_ context.Context, _ *models.Settings, ep awsauth.Endpoint, _ Shared) (awsapi.API, error) {
			if f := aws[ep.Region]; f != nil {
				return f, nil
			}
			return nil, fmt.Errorf("no AWS client for %s in this test", ep.Region)
		}))
	if err != nil {
		t.Fatal(err)
	}
	if d.setupErr != nil {
		t.Fatalf("test settings rejected: %v", d.setupErr)
	}
	return d
}

// inAccount gives the fake's alarms and inventory the ARNs of region and account.
func inAccount(f *fakeAWS, region, account string) *fakeAWS {
	for i, a := range f.alarms {
		f.alarms[i].ARN = fmt.Sprintf("arn:aws:cloudwatch:%s:%s:alarm:%s", region, account, a.Name)
	}
	f.inventory.Region = region
	for i, ep := range f.inventory.Endpoints {
		f.inventory.Endpoints[i].ARN = fmt.Sprintf("arn:aws:sagemaker:%s:%s:endpoint/%s", region, account, ep.Name)
		for j, c := range ep.Components {
			ep.Components[j].ARN = fmt.Sprintf("arn:aws:sagemaker:%s:%s:inference-component/%s", region, account, c.Name)
		}
	}
	return f
}

// westFake is us-west-2 in another account, with the same names as us-east-1's fleet: chat
// with chat-llama (its alarm of the same name in OK, not ALARM) and embed.
func westFake() *fakeAWS {
	f := fullFake()
	f.inventory.Endpoints = slices.DeleteFunc(f.inventory.Endpoints, func(ep awsapi.Endpoint) bool { return ep.Name == "new-ep" })
	for i := range f.inventory.Endpoints {
		ep := &f.inventory.Endpoints[i]
		ep.Components = slices.DeleteFunc(ep.Components, func(c awsapi.Component) bool { return c.Name == "chat-qwen" })
	}
	f.alarms = f.alarms[:1]
	f.alarms[0].State, f.alarms[0].Reason = awsapi.StateOK, "Threshold not crossed"
	f.contributors = nil
	f.history = f.history[:1]
	f.history[0].From, f.history[0].To = "ALARM", "OK"
	return inAccount(f, "us-west-2", westAccount)
}

func twoRegionFakes() map[string]*fakeAWS {
	return map[string]*fakeAWS{"us-east-1": inAccount(fullFake(), "us-east-1", eastAccount), "us-west-2": westFake()}
}

// TestHealthQueriesAcrossRegionsGolden: the frames of queries naming two regions, field for
// field: each row with its region, account and own region's links.
func TestHealthQueriesAcrossRegionsGolden(t *testing.T) {
	for _, tt := range []struct{ name, queryType, model string }{
		{"regions-alarms", "alarms", bothRegions},
		{"regions-alarmHistory", "alarmHistory", `{"region":"us-east-1,us-west-2","format":"table"}`},
		{"regions-inventory", "inventory", bothRegions},
		{"regions-inventory-annotations", "inventory", `{"region":"us-west-2, us-east-1","format":"annotations"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dr := runOne(t, newRegionsDatasource(t, twoRegionFakes(), nil), tt.queryType, tt.model)
			goldentest.CheckDataResponse(t, "testdata", tt.name, &dr, *update)
		})
	}
}

// TestAlarmsNeverCrossRegions: the same IC name in two regions and accounts gives two rows,
// each coloured by its own region's alarms only, each region asked once.
func TestAlarmsNeverCrossRegions(t *testing.T) {
	fakes := twoRegionFakes()
	dr := runOne(t, newRegionsDatasource(t, fakes, nil), "alarms", bothRegions)
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	f := dr.Frames[0]
	got := map[string]string{}
	for i, r := range frameColumn(t, f, "resource") {
		key := r + "@" + frameColumn(t, f, "region")[i] + "/" + frameColumn(t, f, "account")[i]
		got[key] = frameColumn(t, f, "state")[i] + " " + frameColumn(t, f, "alarm_url")[i]
	}
	for key, want := range map[string]string{
		"chat-llama@us-east-1/" + eastAccount: "ALARM https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#alarmsV2:alarm/kv-cache-chat-llama",
		"chat-llama@us-west-2/" + westAccount: "OK https://us-west-2.console.aws.amazon.com/cloudwatch/home?region=us-west-2#alarmsV2:alarm/kv-cache-chat-llama",
		"chat-qwen@us-east-1/" + eastAccount:  "ALARM https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#alarmsV2:alarm/ttft-p99-by-ic",
		"embed@us-west-2/" + westAccount:      "NO_ALARM ",
	} {
		if got[key] != want {
			t.Errorf("%s: %q, want %q", key, got[key], want)
		}
	}
	if len(got) != 9 {
		t.Errorf("%d rows, want 6 in us-east-1 and 3 in us-west-2: %v", len(got), got)
	}
	for region, fake := range fakes {
		if calls := fake.Calls(); !slices.Contains(calls, "Alarms") || !slices.Contains(calls, "Inventory") || len(calls) > 3 {
			t.Errorf("%s calls %v", region, calls)
		}
	}
}

// TestHealthQueryRegionFailures: a region that fails is named in the error, with its status
// and source, and the other region's rows stay.
func TestHealthQueryRegionFailures(t *testing.T) {
	for _, tt := range []struct {
		name       string
		queryType  string
		west       func(*fakeAWS) *fakeAWS
		wantStatus backend.Status
		wantSource backend.ErrorSource
		want       []string
		eastRows   bool
	}{
		{name: "alarms refused in one region", queryType: "alarms",
			west:       func(f *fakeAWS) *fakeAWS { f.alarmsErr = denied("cloudwatch:DescribeAlarms"); return f },
			wantStatus: http.StatusForbidden, wantSource: backend.ErrorSourceDownstream,
			want: []string{"region us-west-2: ", "cloudwatch:DescribeAlarms"}, eastRows: true},
		{name: "history failing in one region", queryType: "alarmHistory",
			west: func(f *fakeAWS) *fakeAWS {
				f.historyErr = &awsapi.Error{Action: "cloudwatch:DescribeAlarmHistory", Status: 500, Code: "InternalFailure", Message: "try again"}
				return f
			},
			wantStatus: http.StatusBadGateway, wantSource: backend.ErrorSourceDownstream,
			want: []string{"region us-west-2: ", "InternalFailure"}, eastRows: true},
		{name: "a panic in one region", queryType: "inventory",
			west:       func(f *fakeAWS) *fakeAWS { f.panicIn = "Inventory"; return f },
			wantStatus: backend.StatusInternal, wantSource: backend.ErrorSourcePlugin,
			want: []string{"region us-west-2: "}, eastRows: true},
		{name: "no AWS client in one region", queryType: "alarms",
			west: func(*fakeAWS) *fakeAWS { return nil },
			want: []string{"region us-west-2: ", "no AWS client for us-west-2"}, eastRows: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fakes := twoRegionFakes()
			if fakes["us-west-2"] = tt.west(fakes["us-west-2"]); fakes["us-west-2"] == nil {
				delete(fakes, "us-west-2")
			}
			dr := runOne(t, newRegionsDatasource(t, fakes, nil), tt.queryType, bothRegions)
			if dr.Error == nil {
				t.Fatal("want an error naming the region")
			}
			for _, w := range tt.want {
				if !strings.Contains(dr.Error.Error(), w) {
					t.Errorf("error %q lacks %q", dr.Error, w)
				}
			}
			if strings.Contains(dr.Error.Error(), "us-east-1") || (tt.wantSource != "" && dr.ErrorSource != tt.wantSource) || (tt.wantStatus != 0 && dr.Status != tt.wantStatus) {
				t.Errorf("error %q: status %d source %q, want %d %q", dr.Error, dr.Status, dr.ErrorSource, tt.wantStatus, tt.wantSource)
			}
			if len(dr.Frames) != 1 {
				t.Fatalf("%d frames, want the other region's", len(dr.Frames))
			}
			regions := frameColumn(t, dr.Frames[0], "region")
			if tt.eastRows && (len(regions) == 0 || slices.ContainsFunc(regions, func(r string) bool { return r != "us-east-1" })) {
				t.Errorf("rows of regions %v, want us-east-1's", regions)
			}
		})
	}

	t.Run("every region failing", func(t *testing.T) {
		fakes := twoRegionFakes()
		for _, f := range fakes {
			f.alarmsErr = denied("cloudwatch:DescribeAlarms")
		}
		dr := runOne(t, newRegionsDatasource(t, fakes, nil), "alarms", bothRegions)
		if dr.Error == nil || !strings.Contains(dr.Error.Error(), "region us-east-1: ") || !strings.Contains(dr.Error.Error(), "region us-west-2: ") || dr.Status != http.StatusForbidden {
			t.Errorf("error %v (%d), want both regions named", dr.Error, dr.Status)
		}
	})
}

// TestHealthQueryBadRegionSendsNothing: a region that is no region name, or not allowed, is
// refused before any AWS call.
func TestHealthQueryBadRegionSendsNothing(t *testing.T) {
	for _, tt := range []struct{ region, want string }{
		{"us-east1", `"us-east1" is not an AWS region name`},
		{"us-east-1,$region", `"$region"`},
	} {
		for _, qt := range []string{"alarms", "alarmHistory", "inventory"} {
			fakes := twoRegionFakes()
			dr := runOne(t, newRegionsDatasource(t, fakes, nil), qt, fmt.Sprintf(`{"region":%q}`, tt.region))
			if dr.Error == nil || !strings.Contains(dr.Error.Error(), tt.want) || dr.ErrorSource != backend.ErrorSourceDownstream {
				t.Errorf("%s region %q: %v (%s), want a downstream error with %q", qt, tt.region, dr.Error, dr.ErrorSource, tt.want)
			}
			for region, f := range fakes {
				if calls := f.Calls(); len(calls) > 0 {
					t.Errorf("%s region %q: %s was called: %v", qt, tt.region, region, calls)
				}
			}
		}
	}
}

// TestThresholdFallbackPerRegion: each region reads the thresholds from its own CloudWatch,
// and a reading colours only its own region's resource of that name.
func TestThresholdFallbackPerRegion(t *testing.T) {
	east := &fakeUpstream{answer: thresholdVectors}
	west := &fakeUpstream{answer: func(c call) (*fakeResponse, error) {
		return okJSON(`{"status":"success","data":{"resultType":"vector","result":[]}}`), nil
	}}
	dr := runOne(t, newRegionsDatasource(t, twoRegionFakes(), map[string]*fakeUpstream{"us-east-1": east, "us-west-2": west}),
		"alarms", `{"region":"us-east-1,us-west-2","thresholdFallback":true}`)
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	f := dr.Frames[0]
	got := map[string]string{}
	for i, r := range frameColumn(t, f, "resource") {
		got[r+"@"+frameColumn(t, f, "region")[i]] = frameColumn(t, f, "state")[i] + " " + frameColumn(t, f, "source")[i]
	}
	if got["embed@us-east-1"] != "ALARM threshold" || got["embed@us-west-2"] != "NO_ALARM none" {
		t.Errorf("embed: us-east-1 %q, us-west-2 %q; want the GPU memory reading to colour us-east-1's only", got["embed@us-east-1"], got["embed@us-west-2"])
	}
	if e, w := len(east.Calls()), len(west.Calls()); e != 2 || w != 2 {
		t.Errorf("threshold queries: %d in us-east-1, %d in us-west-2; want 2 each", e, w)
	}
	for _, c := range append(east.Calls(), west.Calls()...) {
		if !strings.Contains(c.expr, `"@aws.account")`) {
			t.Errorf("a query naming its regions reads thresholds per account: %s", c.expr)
		}
	}
}

// TestInventoryResourcesAcrossRegions: the variables list every region's names; a region
// that fails fails the call naming it; a bad region is refused before any call.
func TestInventoryResourcesAcrossRegions(t *testing.T) {
	for _, tt := range []struct {
		name, query string
		west        func(*fakeAWS)
		wantStatus  int
		want        string
		noCalls     bool
	}{
		{name: "endpoints of both", query: "region=us-east-1,us-west-2", wantStatus: 200, want: `{"values":["chat","embed","new-ep"]}`},
		{name: "endpoints of us-west-2", query: "region=us-west-2", wantStatus: 200, want: `{"values":["chat","embed"]}`},
		{name: "one region refused", query: "region=us-east-1,us-west-2", west: func(f *fakeAWS) { f.inventoryErr = denied("sagemaker:ListEndpoints") },
			wantStatus: 403, want: "region us-west-2: "},
		{name: "not a region", query: "region=us-west2", wantStatus: 400, want: `us-west2`, noCalls: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fakes := twoRegionFakes()
			if tt.west != nil {
				tt.west(fakes["us-west-2"])
			}
			resp := callResource(t, newRegionsDatasource(t, fakes, nil), resourceCall{method: "GET", path: "inventory/endpoints", query: tt.query})
			body := string(resp.Body)
			if resp.Status != tt.wantStatus || (tt.wantStatus == 200 && body != tt.want) || !strings.Contains(body, tt.want) {
				t.Errorf("%d %s, want %d %s", resp.Status, body, tt.wantStatus, tt.want)
			}
			for region, f := range fakes {
				if calls := f.Calls(); tt.noCalls && len(calls) > 0 {
					t.Errorf("%s was called: %v", region, calls)
				}
			}
		})
	}
}

// TestSaveAndTestProbesTheDefaultRegionOnly: other regions' clients are neither built nor
// called by Save & test.
func TestSaveAndTestProbesTheDefaultRegionOnly(t *testing.T) {
	fakes := twoRegionFakes()
	d := newRegionsDatasource(t, fakes, map[string]*fakeUpstream{"us-east-1": {}})
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil || res.Status != backend.HealthStatusOk {
		t.Fatalf("%v %v", res, err)
	}
	calls := fakes["us-east-1"].Calls()
	slices.Sort(calls) // the probes run in parallel
	if !slices.Equal(calls, []string{"ProbeAlarms", "ProbeInventory", "ProbeScaling"}) {
		t.Errorf("us-east-1 calls %v, want the three probes", calls)
	}
	if calls := fakes["us-west-2"].Calls(); len(calls) > 0 {
		t.Errorf("us-west-2 was probed: %v", calls)
	}
}

// TestAlarmsAcrossRegionsRandom: random fleets in up to four regions and two accounts, with
// the same endpoint names everywhere, through QueryData in a random region order: the frame
// has one row per (region, account, endpoint), each in the worst state of its own alarms
// (a metric alarm is in its ARN's account, a PromQL alarm in the account it matches).
func TestAlarmsAcrossRegionsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 15))
	regions := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-south-1"}
	accounts := []string{eastAccount, westAccount}
	states := []string{awsapi.StateOK, awsapi.StateAlarm, awsapi.StateInsufficientData}
	names := []string{"chat", "embed"}
	for round := range 60 {
		fakes := map[string]*fakeAWS{}
		want := map[string]float64{}
		var asked []string
		for _, region := range regions {
			if rng.IntN(3) == 0 {
				continue
			}
			asked = append(asked, region)
			f := &fakeAWS{inventory: awsapi.Inventory{Region: region}}
			for _, name := range names {
				for _, account := range accounts {
					if rng.IntN(2) == 0 {
						f.inventory.Endpoints = append(f.inventory.Endpoints, awsapi.Endpoint{Name: name,
							ARN: fmt.Sprintf("arn:aws:sagemaker:%s:%s:endpoint/%s", region, account, name)})
						want[region+"/"+account+"/"+name] = 0
					}
				}
			}
			for a := range rng.IntN(6) {
				own, name, state := accounts[rng.IntN(2)], names[rng.IntN(2)], states[rng.IntN(3)]
				al := awsapi.Alarm{Name: fmt.Sprintf("a%d", a), State: state, ARN: fmt.Sprintf("arn:aws:cloudwatch:%s:%s:alarm:a%d", region, own, a),
					Dimensions: map[string]string{"EndpointName": name}}
				if rng.IntN(2) == 0 { // a monitoring account's alarm over a source account's series
					own = accounts[rng.IntN(2)]
					al.Dimensions, al.PromQL = nil, fmt.Sprintf(`max(x{"@aws.account"=%q, EndpointName=%q}) > 1`, own, name)
				}
				f.alarms = append(f.alarms, al)
				k := region + "/" + own + "/" + name
				want[k] = max(want[k], health.Severity(state))
			}
			fakes[region] = f
		}
		if len(asked) == 0 {
			continue
		}
		rng.Shuffle(len(asked), func(i, j int) { asked[i], asked[j] = asked[j], asked[i] })
		dr := runOne(t, newRegionsDatasource(t, fakes, nil), "alarms", fmt.Sprintf(`{"region":%q}`, strings.Join(asked, ",")))
		if dr.Error != nil {
			t.Fatalf("round %d: %v", round, dr.Error)
		}
		f := dr.Frames[0]
		got := map[string]float64{}
		severity := frameColumn(t, f, "severity")
		for i, r := range frameColumn(t, f, "resource") {
			k := frameColumn(t, f, "region")[i] + "/" + frameColumn(t, f, "account")[i] + "/" + r
			if _, dup := got[k]; dup {
				t.Errorf("round %d: %s twice", round, k)
			}
			var v float64
			fmt.Sscan(severity[i], &v)
			got[k] = v
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round %d (regions %v):\n got %v\nwant %v", round, asked, got, want)
		}
	}
}

// TestParallelNBounds: at most n calls run at once, and each one that ends lets exactly the
// next one in (what bounds the regions of a health query and the contributor calls).
func TestParallelNBounds(t *testing.T) {
	const n, total = 2, 6
	var inflight, peak atomic.Int32
	release, entered := make(chan struct{}), make(chan struct{}, total)
	calls := make([]func() error, total)
	for i := range calls {
		calls[i] = func() error {
			cur := inflight.Add(1)
			for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
			}
			entered <- struct{}{}
			<-release
			inflight.Add(-1)
			return nil
		}
	}
	done := make(chan []error)
	go func() { done <- parallelN("test", n, calls...) }()
	for range n {
		<-entered
	}
	for range 1000 { // whatever else may start has every chance to
		runtime.Gosched()
	}
	if in := inflight.Load(); in != n {
		t.Errorf("%d calls running while %d hold their slots, want %d", in, n, n)
	}
	for range total - n {
		release <- struct{}{}
		<-entered
	}
	for range n {
		release <- struct{}{}
	}
	for i, err := range <-done {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if p := peak.Load(); p != n {
		t.Errorf("%d calls ran at once, want %d", p, n)
	}
}
