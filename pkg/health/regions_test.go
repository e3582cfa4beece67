package health

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func TestAccountOf(t *testing.T) {
	for _, tt := range []struct{ arn, want string }{
		{"arn:aws:cloudwatch:us-east-1:123456789012:alarm:kv cache chat", "123456789012"},
		{"arn:aws:sagemaker:us-west-2:210987654321:endpoint/chat", "210987654321"},
		{"arn:aws:sagemaker:us-west-2:210987654321:inference-component/chat-llama", "210987654321"},
		{"arn:aws-cn:sagemaker:cn-north-1:111122223333:endpoint/chat", "111122223333"},
		{"arn:aws-us-gov:cloudwatch:us-gov-west-1:444455556666:alarm:x", "444455556666"},
		{"arn:aws:s3:::bucket", ""}, // no account in the ARN
		{"", ""},
		{"arn", ""},
		{"arn:aws:cloudwatch", ""},
		{"chat", ""},
	} {
		if got := AccountOf(tt.arn); got != tt.want {
			t.Errorf("AccountOf(%q) = %q, want %q", tt.arn, got, tt.want)
		}
	}
}

// TestAlarmAccount: a metric alarm's resource is in the alarm's own account (its ARN); a
// PromQL alarm's in the account its query or its series name, else unknown (placed by Join).
func TestAlarmAccount(t *testing.T) {
	const own, source = "111111111111", "222222222222"
	arn := "arn:aws:cloudwatch:us-east-1:" + own + ":alarm:a"
	for _, tt := range []struct {
		name         string
		alarm        awsapi.Alarm
		contributors []awsapi.Contributor
		want         []target
	}{
		{"metric alarm: its own account", awsapi.Alarm{ARN: arn, Dimensions: map[string]string{"EndpointName": "chat"}},
			nil, []target{{endpoint: "chat", account: own}}},
		{"PromQL alarm naming the source account", awsapi.Alarm{ARN: arn,
			PromQL: `max({"vllm:kv_cache_usage_perc", "@aws.account"="` + source + `", "aws.sagemaker.endpoint.name"="chat"}) > 0.9`},
			nil, []target{{endpoint: "chat", account: source}}},
		{"PromQL alarm over several accounts: unknown", awsapi.Alarm{ARN: arn,
			PromQL: `max({"vllm:kv_cache_usage_perc", "@aws.account"=~"1.*", "aws.sagemaker.endpoint.name"="chat"}) > 0.9`},
			nil, []target{{endpoint: "chat"}}},
		{"contributors carry their account", awsapi.Alarm{ARN: arn, State: awsapi.StateAlarm,
			PromQL: `max by ("@aws.account", "aws.sagemaker.inference_component.name") (vllm:kv_cache_usage_perc) > 0.9`},
			[]awsapi.Contributor{
				{Attributes: map[string]string{semconv.LabelAccount: source, semconv.LabelInferenceComp: "ic"}},
				{Attributes: map[string]string{semconv.LabelInferenceComp: "ic"}},
			}, []target{{component: "ic", account: source}, {component: "ic"}}},
		{"no ARN: unknown", awsapi.Alarm{Dimensions: map[string]string{"EndpointName": "chat"}}, nil, []target{{endpoint: "chat"}}},
		{"another service's alarm names nothing", awsapi.Alarm{ARN: arn, Namespace: "AWS/EC2", Dimensions: map[string]string{"InstanceId": "i-1"}}, nil, nil},
	} {
		var got []target
		for _, h := range hits(tt.alarm, tt.contributors) {
			got = append(got, h.target)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// layout is a random fleet over regions and accounts whose names collide, with alarms, and
// the model of what the alarms query must show: per (region, account, type, name) the
// severities of the alarms on it.
type layout struct {
	inputs []Input
	want   map[Resource][]float64
}

// identity is what tells resources apart: type, name, region and account (a row also
// carries the endpoint and IC it belongs to).
func identity(r Resource) Resource {
	id := Resource{Type: r.Type, Region: r.Region, Account: r.Account}
	switch r.Type {
	case TypeEndpoint:
		id.Endpoint = r.Endpoint
	case TypeComponent:
		id.Component = r.Component
	default:
		id.Instance = r.Instance
	}
	return id
}

var (
	testRegions  = []string{"us-east-1", "us-west-2", "cn-north-1"}
	testAccounts = []string{"111111111111", "222222222222"}
)

func partition(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "aws-cn"
	}
	return "aws"
}

func randomLayout(rng *rand.Rand) layout {
	states := []string{awsapi.StateOK, awsapi.StateAlarm, awsapi.StateInsufficientData}
	l := layout{want: map[Resource][]float64{}}
	key := func(typ, name, region, account string) Resource {
		return identity(Resource{Type: typ, Endpoint: name, Component: name, Instance: name, Region: region, Account: account})
	}
	for _, region := range testRegions {
		if rng.IntN(4) == 0 {
			continue // a region without anything
		}
		in := Input{Region: region, Contributors: map[string][]awsapi.Contributor{}}
		in.Inventory.Region = region
		// The same few names everywhere: chat and embed, ICs chat-0 and chat-1.
		type placed struct{ name, account string }
		var eps, ics []placed
		for _, name := range []string{"chat", "embed"} {
			for _, account := range testAccounts {
				if rng.IntN(2) == 0 {
					continue
				}
				ep := awsapi.Endpoint{Name: name, ARN: fmt.Sprintf("arn:%s:sagemaker:%s:%s:endpoint/%s", partition(region), region, account, name)}
				eps = append(eps, placed{name, account})
				l.want[key(TypeEndpoint, name, region, account)] = nil
				for c := range rng.IntN(3) {
					ic := awsapi.Component{Name: fmt.Sprintf("%s-%d", name, c), Endpoint: name}
					if rng.IntN(2) == 0 { // an IC without ARN is in its endpoint's account
						ic.ARN = fmt.Sprintf("arn:%s:sagemaker:%s:%s:inference-component/%s", partition(region), region, account, ic.Name)
					}
					ep.Components = append(ep.Components, ic)
					ics = append(ics, placed{ic.Name, account})
					l.want[key(TypeComponent, ic.Name, region, account)] = nil
				}
				in.Inventory.Endpoints = append(in.Inventory.Endpoints, ep)
			}
		}
		for a := range rng.IntN(10) {
			own := testAccounts[rng.IntN(len(testAccounts))]
			al := awsapi.Alarm{Name: fmt.Sprintf("alarm-%d", a), State: states[rng.IntN(3)],
				ARN:     fmt.Sprintf("arn:%s:cloudwatch:%s:%s:alarm:alarm-%d", partition(region), region, own, a),
				Updated: t0.Add(time.Duration(rng.IntN(100)) * time.Minute)}
			pick := func(ps []placed, fallback string) placed {
				if len(ps) == 0 || rng.IntN(5) == 0 {
					return placed{fallback, own} // a resource not in the inventory
				}
				return ps[rng.IntN(len(ps))]
			}
			switch rng.IntN(5) {
			case 0: // metric alarm: in its own account
				p := pick(eps, "gone")
				p.account = own
				al.Dimensions = map[string]string{"EndpointName": p.name}
				l.want[key(TypeEndpoint, p.name, region, own)] = append(l.want[key(TypeEndpoint, p.name, region, own)], Severity(al.State))
			case 1: // PromQL alarm naming the IC's account
				p := pick(ics, "chat-9")
				al.PromQL = fmt.Sprintf(`max({"vllm:kv_cache_usage_perc", %q=%q, %q=%q}) > 0.9`, semconv.LabelAccount, p.account, semconv.LabelInferenceComp, p.name)
				k := key(TypeComponent, p.name, region, p.account)
				l.want[k] = append(l.want[k], Severity(al.State))
			case 2: // an instance, in the alarm's account
				name := fmt.Sprintf("i-%d", rng.IntN(2))
				al.Dimensions = map[string]string{"InstanceId": name}
				k := key(TypeInstance, name, region, own)
				l.want[k] = append(l.want[k], Severity(al.State))
			case 3: // a PromQL alarm without an account: every account's IC of that name, else its own
				p := pick(ics, "chat-7")
				al.PromQL = fmt.Sprintf(`max({"vllm:kv_cache_usage_perc", %q=%q}) > 0.9`, semconv.LabelInferenceComp, p.name)
				placed := false
				for _, ic := range ics {
					if ic.name == p.name {
						k := key(TypeComponent, ic.name, region, ic.account)
						l.want[k], placed = append(l.want[k], Severity(al.State)), true
					}
				}
				if !placed {
					k := key(TypeComponent, p.name, region, own)
					l.want[k] = append(l.want[k], Severity(al.State))
				}
			default: // a by-IC alarm in ALARM over every account: its series name the IC and account
				al.State = awsapi.StateAlarm
				al.PromQL = `max by ("@aws.account", "aws.sagemaker.inference_component.name") (vllm:kv_cache_usage_perc) > 0.9`
				for range 1 + rng.IntN(2) {
					p := pick(ics, "chat-8")
					in.Contributors[al.Name] = append(in.Contributors[al.Name], awsapi.Contributor{
						Attributes: map[string]string{semconv.LabelAccount: p.account, semconv.LabelInferenceComp: p.name}})
					k := key(TypeComponent, p.name, region, p.account)
					l.want[k] = append(l.want[k], Severity(al.State))
				}
			}
			in.Alarms = append(in.Alarms, al)
		}
		l.inputs = append(l.inputs, in)
	}
	return l
}

// joinAll is what the plugin does with several regions: one Join per region, rows merged.
func joinAll(inputs []Input) []State {
	var all []State
	for _, in := range inputs {
		states, _ := Join(in)
		all = append(all, states...)
	}
	Sort(all)
	return all
}

// TestJoinAcrossRegionsAndAccounts: over random fleets spread over three regions (one in
// China) and two accounts with the same endpoint and IC names everywhere, every (region,
// account, resource) is one row whose state is the worst of its own alarms only, rows are
// worst first, and each row's links are for its own region and partition.
func TestJoinAcrossRegionsAndAccounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 2026))
	collided := 0
	for round := range 300 {
		l := randomLayout(rng)
		got := joinAll(l.inputs)
		seen := map[Resource]bool{}
		names := map[string]int{}
		for i, s := range got {
			k := identity(s.Resource)
			if seen[k] {
				t.Fatalf("round %d: %+v appears twice", round, k)
			}
			seen[k] = true
			names[s.Type+"/"+s.Name()]++
			sevs, ok := l.want[k]
			if !ok {
				t.Fatalf("round %d: row %+v is no resource of the layout", round, k)
			}
			worst := 0.0
			for _, v := range sevs {
				worst = max(worst, v)
			}
			if Severity(s.State) != worst || s.Alarms != len(sevs) {
				t.Errorf("round %d: %+v: severity %v from %d alarms, want %v from %d", round, k, Severity(s.State), s.Alarms, worst, len(sevs))
			}
			if i > 0 && Severity(got[i-1].State) < Severity(s.State) {
				t.Errorf("round %d: row %d (%s) after a better one", round, i, s.State)
			}
			host := s.Region + ".console.aws.amazon.com"
			if partition(s.Region) == "aws-cn" {
				host = s.Region + ".console.amazonaws.cn"
			}
			wantPage := "https://" + host + "/sagemaker/home?region=" + s.Region + "#/"
			if url := s.ConsoleURL(); s.Type != TypeInstance && !strings.HasPrefix(url, wantPage) {
				t.Errorf("round %d: %+v console link %s, want under %s", round, k, url, wantPage)
			}
			if len(sevs) > 0 && !strings.HasPrefix(s.AlarmURL, "https://"+host+"/cloudwatch/home?region="+s.Region+"#") {
				t.Errorf("round %d: %+v alarm link %s is not for %s", round, k, s.AlarmURL, s.Region)
			}
		}
		if len(seen) != len(l.want) {
			t.Errorf("round %d: %d rows for %d resources", round, len(seen), len(l.want))
		}
		for _, n := range names {
			if n > 1 {
				collided++
			}
		}
	}
	if collided < 100 {
		t.Errorf("only %d names shared by several regions or accounts: the layouts do not test collisions", collided)
	}
}

// TestPlaceAlarmsInAccounts: in a monitoring account (alarms in account M, endpoints in
// source accounts A and B with the same names), a PromQL alarm without an account matcher
// applies to every account's resource of its name, an instance to its IC's one account, a
// resource no account has to the alarm's own; a metric alarm stays in its own account.
func TestPlaceAlarmsInAccounts(t *testing.T) {
	const m, a, b = "999999999999", "111111111111", "222222222222"
	ep := func(account, name string, ics ...string) awsapi.Endpoint {
		e := awsapi.Endpoint{Name: name, ARN: "arn:aws:sagemaker:us-east-1:" + account + ":endpoint/" + name}
		for _, ic := range ics {
			e.Components = append(e.Components, awsapi.Component{Name: ic, Endpoint: name})
		}
		return e
	}
	alarm := func(name, query string, dims map[string]string) awsapi.Alarm {
		return awsapi.Alarm{Name: name, State: awsapi.StateAlarm, ARN: "arn:aws:cloudwatch:us-east-1:" + m + ":alarm:" + name, PromQL: query, Dimensions: dims}
	}
	states, _ := Join(Input{Region: "us-east-1",
		Inventory: awsapi.Inventory{Endpoints: []awsapi.Endpoint{ep(a, "chat", "chat-llama"), ep(b, "chat")}},
		Alarms: []awsapi.Alarm{
			alarm("p-chat", `x{EndpointName="chat"} > 1`, nil),
			alarm("p-llama", `x{"aws.sagemaker.inference_component.name"="chat-llama"} > 1`, nil),
			alarm("p-gone", `x{EndpointName="gone"} > 1`, nil),
			alarm("p-i-1", `x{"aws.sagemaker.inference_component.name"="chat-llama", "@resource.host.id"="i-1"} > 1`, nil),
			alarm("m-chat", "", map[string]string{"EndpointName": "chat"}),
		}})
	got := map[string]string{}
	for _, s := range states {
		got[s.Name()+"@"+s.Account] = fmt.Sprint(s.Alarms, " ", s.Endpoint)
	}
	want := map[string]string{
		"chat@" + a: "1 chat", "chat@" + b: "1 chat", "chat@" + m: "1 chat",
		"chat-llama@" + a: "1 chat", "gone@" + m: "1 gone", "i-1@" + a: "1 chat",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows %v\nwant %v", got, want)
	}
}

// TestApplyThresholdsPerRegion: a reading colours only its own region's resource of that
// name, and another account's resource only when the reading's account is unknown.
func TestApplyThresholdsPerRegion(t *testing.T) {
	const a1, a2 = "111111111111", "222222222222"
	res := func(region, account string) State {
		return State{Resource: Resource{Type: TypeEndpoint, Endpoint: "chat", Region: region, Account: account}, State: StateNoAlarm, Source: SourceNone}
	}
	states := []State{res("us-east-1", a1), res("us-west-2", a1), res("us-west-2", a2), res("eu-west-1", a1)}
	rules := ThresholdRules(diagnosis.DefaultConfig(), Filter{}, true)
	readings := [][]Reading{{
		{Endpoint: "chat", Region: "us-west-2", Account: a2, Value: 0.95},
		{Endpoint: "chat", Region: "us-east-1", Account: a1, Value: 0.2},
		{Endpoint: "chat", Region: "eu-west-1", Value: 0.93}, // series without @aws.account
	}, nil}
	ApplyThresholds(states, rules, readings, t0)
	got := map[string]string{}
	for _, s := range states {
		got[s.Region+"/"+s.Account] = s.State
	}
	want := map[string]string{"us-west-2/" + a2: "ALARM", "us-west-2/" + a1: StateNoAlarm, "us-east-1/" + a1: "OK", "eu-west-1/" + a1: "ALARM"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("states %v\nwant   %v", got, want)
	}
}

func column(t *testing.T, fr *data.Frame, name string) []string {
	t.Helper()
	f, _ := fr.FieldByName(name)
	if f == nil {
		t.Fatalf("frame %s has no %s", fr.Name, name)
	}
	out := make([]string, f.Len())
	for i := range out {
		out[i] = fmt.Sprint(f.At(i))
	}
	return out
}

// TestRegionalFrames: the frames of several regions name each row's region and account, and
// link to its own region's console (China's partition too); the same alarm and endpoint
// names in two regions stay apart.
func TestRegionalFrames(t *testing.T) {
	const a1, a2 = "111111111111", "222222222222"
	inv := func(region, account string) awsapi.Inventory {
		p := partition(region)
		return awsapi.Inventory{Region: region, Endpoints: []awsapi.Endpoint{{
			Name: "chat", ARN: "arn:" + p + ":sagemaker:" + region + ":" + account + ":endpoint/chat", Status: "InService", Created: t0, Modified: t0,
			Components: []awsapi.Component{{Name: "chat-llama", Endpoint: "chat", Status: "InService", Created: t0.Add(time.Minute), Modified: t0.Add(time.Minute)}},
		}}}
	}
	invs := []awsapi.Inventory{inv("us-west-2", a2), inv("cn-north-1", a1)}
	fr := InventoryFrame(invs, Filter{}, true)
	if got := strings.Join(column(t, fr, "region"), ","); got != "cn-north-1,cn-north-1,us-west-2,us-west-2" {
		t.Errorf("regions %s", got)
	}
	if got := strings.Join(column(t, fr, "account"), ","); got != a1+","+a1+","+a2+","+a2 {
		t.Errorf("accounts %s (an IC without ARN is in its endpoint's account)", got)
	}
	if urls := column(t, fr, "console_url"); !strings.HasPrefix(urls[1], "https://cn-north-1.console.amazonaws.cn/sagemaker/home?region=cn-north-1#/inference-components/chat-llama") ||
		!strings.HasPrefix(urls[2], "https://us-west-2.console.aws.amazon.com/") {
		t.Errorf("console links %v", urls)
	}
	events := InventoryEventsFrame(invs, Filter{}, t0, t0.Add(time.Hour), true)
	if got := strings.Join(column(t, events, "tags"), "|"); got != "endpoint,chat,InService,cn-north-1,"+a1+"|endpoint,chat,InService,us-west-2,"+a2+
		"|inference_component,chat-llama,InService,chat,cn-north-1,"+a1+"|inference_component,chat-llama,InService,chat,us-west-2,"+a2 {
		t.Errorf("event tags %s", got)
	}
	if single := InventoryEventsFrame(invs[:1], Filter{}, t0, t0.Add(time.Hour), false); strings.Contains(strings.Join(column(t, single, "tags"), ","), "us-west-2") {
		t.Errorf("a query without region keeps its tags: %v", column(t, single, "tags"))
	}

	var rows []HistoryRow
	for _, in := range invs {
		rows = append(rows, HistoryRows(HistoryInput{Region: in.Region, Inventory: in,
			Alarms:      []awsapi.Alarm{{Name: "kv", ARN: "arn:" + partition(in.Region) + ":cloudwatch:" + in.Region + ":" + AccountOf(in.Endpoints[0].ARN) + ":alarm:kv", PromQL: `x{"aws.sagemaker.inference_component.name"="chat-llama"} > 0.9`}},
			Transitions: []awsapi.Transition{{Alarm: "kv", Time: t0, From: "OK", To: "ALARM"}}})...)
	}
	h := HistoryFrame(rows, true)
	if got := strings.Join(column(t, h, "tags"), "|"); got != "kv,ALARM,chat,chat-llama,cn-north-1,"+a1+"|kv,ALARM,chat,chat-llama,us-west-2,"+a2 {
		t.Errorf("history tags %s", got)
	}
	if urls := column(t, h, "alarm_url"); !strings.HasPrefix(urls[0], "https://cn-north-1.console.amazonaws.cn/cloudwatch/") || !strings.HasPrefix(urls[1], "https://us-west-2.console.aws.amazon.com/cloudwatch/") {
		t.Errorf("alarm links %v", urls)
	}
	if got := strings.Join(column(t, HistoryFrame(rows, false), "tags"), "|"); got != "kv,ALARM,chat,chat-llama|kv,ALARM,chat,chat-llama" {
		t.Errorf("without region the tags stay as they were: %s", got)
	}

	// A deleted alarm's transition knows no account: its IC's account and endpoint are found
	// when one account of the region has that IC, and left empty when two do.
	deleted := []awsapi.Transition{{Alarm: "gone", Time: t0, To: "ALARM", Contributor: map[string]string{semconv.LabelInferenceComp: "chat-llama"}}}
	two := inv("us-west-2", a2)
	other := inv("us-west-2", a1).Endpoints[0]
	other.Name = "chat-b"
	two.Endpoints = append(two.Endpoints, other)
	for _, tt := range []struct {
		inv                   awsapi.Inventory
		wantEndpoint, account string
	}{{invs[0], "chat", a2}, {two, "", ""}} {
		r := HistoryRows(HistoryInput{Region: "us-west-2", Inventory: tt.inv, Transitions: deleted})
		if len(r) != 1 || r[0].Endpoint != tt.wantEndpoint || r[0].Account != tt.account {
			t.Errorf("deleted alarm's transition over %d endpoints: %+v, want endpoint %q in %q", len(tt.inv.Endpoints), r, tt.wantEndpoint, tt.account)
		}
	}
}
