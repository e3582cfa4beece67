package changes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)

func change(id, kind, resource, endpoint string, minutesBefore float64) Change {
	return Change{EventID: id, Kind: kind, Resource: resource, Endpoint: endpoint, Account: "1", Region: "us-east-1",
		Time: t0.Add(-time.Duration(minutesBefore * float64(time.Minute)))}
}

func ids(cs []Cause) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Change.EventID)
	}
	return out
}

func TestAttribute(t *testing.T) {
	ic := Signal{Kind: KindComponent, Resource: "chat-ic", Endpoint: "llm-ep", Account: "1", Region: "us-east-1", Start: t0}
	ep := Signal{Kind: KindEndpoint, Resource: "llm-ep", Endpoint: "llm-ep", Start: t0}
	inst := Signal{Kind: "instance", Resource: "i-0abc", Endpoint: "llm-ep", Start: t0}
	itype := Signal{Kind: "instance-type", Resource: "ml.g5.12xlarge", Start: t0}
	tests := []struct {
		name    string
		sig     Signal
		changes []Change
		want    []string
	}{
		{"the IC's own deployment", ic, []Change{change("deploy", KindComponent, "chat-ic", "", 2)}, []string{"deploy"}},
		{"a change after the signal began is never blamed", ic, []Change{change("late", KindComponent, "chat-ic", "", -1)}, nil},
		{"at the signal's start it may be", ic, []Change{change("same", KindComponent, "chat-ic", "", 0)}, []string{"same"}},
		{"older than the window is history", ic, []Change{change("old", KindComponent, "chat-ic", "", 31)}, nil},
		{"another IC of the same endpoint is unrelated", ic, []Change{change("sibling", KindComponent, "code-ic", "llm-ep", 1)}, nil},
		{"another endpoint is unrelated", ic, []Change{change("other", KindEndpoint, "other-ep", "other-ep", 1)}, nil},
		{"an endpoint config alone acts on nothing", ic, []Change{change("cfg", KindEndpointConfig, "llm-ep-config-v2", "", 1)}, nil},
		{"another account's resource of the same name", ic, []Change{func() Change { c := change("acct", KindComponent, "chat-ic", "", 1); c.Account = "2"; return c }()}, nil},
		{"another region's", ic, []Change{func() Change { c := change("reg", KindComponent, "chat-ic", "", 1); c.Region = "eu-west-1"; return c }()}, nil},
		{"the resource ranks above its endpoint, however recent", ic,
			[]Change{change("ep-update", KindEndpoint, "llm-ep", "llm-ep", 1), change("deploy", KindComponent, "chat-ic", "", 20)}, []string{"deploy", "ep-update"}},
		{"within a scope the latest first", ic,
			[]Change{change("earlier", KindComponent, "chat-ic", "", 12), change("later", KindComponent, "chat-ic", "", 3)}, []string{"later", "earlier"}},
		{"an endpoint's signal: its update, then its ICs'", ep,
			[]Change{change("ic", KindComponent, "chat-ic", "llm-ep", 1), change("update", KindEndpoint, "llm-ep", "llm-ep", 4)}, []string{"update", "ic"}},
		{"an instance's signal: its endpoint, then the endpoint's ICs", inst,
			[]Change{change("ic", KindComponent, "chat-ic", "llm-ep", 1), change("update", KindEndpoint, "llm-ep", "llm-ep", 4), change("far", KindComponent, "x", "other", 1)},
			[]string{"update", "ic"}},
		{"a signal of no endpoint has only its own resource", itype, []Change{change("update", KindEndpoint, "llm-ep", "llm-ep", 1)}, nil},
		{"no start, no cause", Signal{Kind: KindComponent, Resource: "chat-ic"}, []Change{change("deploy", KindComponent, "chat-ic", "", 2)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Attribute(tc.sig, tc.changes, DefaultWindow)
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("Attribute = %v, want %v", ids(got), tc.want)
			}
			for _, c := range got {
				if c.Lead < 0 || c.Lead > DefaultWindow || c.Lead != tc.sig.Start.Sub(c.Change.Time) {
					t.Errorf("%s: lead %v", c.Change.EventID, c.Lead)
				}
			}
		})
	}
}

func TestFillEndpointsTiesICUpdatesToTheirEndpoint(t *testing.T) {
	cs := []Change{change("upd", KindComponent, "chat-ic", "", 2), change("new", KindComponent, "code-ic", "other-ep", 2), change("ep", KindEndpoint, "llm-ep", "llm-ep", 2)}
	FillEndpoints(cs, map[string]string{"chat-ic": "llm-ep", "code-ic": "llm-ep"})
	got := []string{cs[0].Endpoint, cs[1].Endpoint, cs[2].Endpoint}
	if !slices.Equal(got, []string{"llm-ep", "other-ep", "llm-ep"}) {
		t.Errorf("endpoints %v: an unnamed IC's endpoint comes from the map, a named one stays", got)
	}
	if ids(Attribute(Signal{Kind: KindEndpoint, Resource: "llm-ep", Endpoint: "llm-ep", Start: t0}, cs, DefaultWindow))[1] != "upd" {
		t.Error("the endpoint's signal is not tied to its IC's update")
	}
}

// On generated histories (random resources, random times around the signal, seeded):
// every cause is related, before the start and within the window; every such change is a
// cause; causes are ordered by scope, then lead. And a deployment 0-5 minutes before a
// signal on its IC leads, whatever else changed.
func TestAttributeOnGeneratedHistories(t *testing.T) {
	resources := []struct{ kind, name, endpoint string }{
		{KindComponent, "chat-ic", "llm-ep"}, {KindComponent, "code-ic", "llm-ep"}, {KindComponent, "rag-ic", "rag-ep"},
		{KindEndpoint, "llm-ep", "llm-ep"}, {KindEndpoint, "rag-ep", "rag-ep"}, {KindEndpointConfig, "llm-ep-config-v2", ""},
	}
	signals := []Signal{
		{Kind: KindComponent, Resource: "chat-ic", Endpoint: "llm-ep"}, {Kind: KindEndpoint, Resource: "rag-ep", Endpoint: "rag-ep"},
		{Kind: "instance", Resource: "i-1", Endpoint: "llm-ep"},
	}
	rng := rand.New(rand.NewPCG(36, 2026))
	for round := range 500 {
		sig := signals[rng.IntN(len(signals))]
		sig.Start = t0
		var cs []Change
		for i := range rng.IntN(12) {
			r := resources[rng.IntN(len(resources))]
			// From 90 minutes before the signal to 30 after it.
			cs = append(cs, change(fmt.Sprintf("%d-%d", round, i), r.kind, r.name, r.endpoint, 90-120*rng.Float64()))
		}
		got := Attribute(sig, cs, DefaultWindow)
		blamed := map[string]bool{}
		for i, c := range got {
			blamed[c.Change.EventID] = true
			if c.Change.Time.After(sig.Start) || c.Lead > DefaultWindow {
				t.Fatalf("round %d: %s blamed at lead %v", round, c.Change.EventID, c.Lead)
			}
			if _, ok := relate(sig, c.Change); !ok {
				t.Fatalf("round %d: %s on %s blamed for %s", round, c.Change.EventID, c.Change.Resource, sig.Resource)
			}
			if i > 0 && (got[i-1].Scope > c.Scope || (got[i-1].Scope == c.Scope && got[i-1].Lead > c.Lead)) {
				t.Fatalf("round %d: causes out of order: %v", round, ids(got))
			}
		}
		for _, c := range cs {
			lead := sig.Start.Sub(c.Time)
			if _, ok := relate(sig, c); ok && lead >= 0 && lead <= DefaultWindow && !blamed[c.EventID] {
				t.Fatalf("round %d: %s on %s, %v before, not blamed for %s", round, c.EventID, c.Resource, lead, sig.Resource)
			}
		}

		// The bad deployment: on the signal's IC, 0-5 minutes before it.
		icSig := Signal{Kind: KindComponent, Resource: "chat-ic", Endpoint: "llm-ep", Start: t0}
		deploy := change("deploy", KindComponent, "chat-ic", "", 5*rng.Float64())
		var noise []Change
		for _, c := range cs {
			if c.Kind != KindComponent || c.Resource != "chat-ic" {
				noise = append(noise, c)
			}
		}
		if top := Attribute(icSig, append(noise, deploy), DefaultWindow); len(top) == 0 || top[0].Change.EventID != "deploy" {
			t.Fatalf("round %d: the deployment %v before the signal is not first: %v", round, t0.Sub(deploy.Time), ids(top))
		}
	}
}
