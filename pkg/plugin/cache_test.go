package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// generated answers range queries with series that are a pure function of (expr,
// series, time), and instant queries with one sample; it counts the points it sent.
func generated(points *int) func(c call) (*fakeResponse, error) {
	var mu sync.Mutex // queries of one request run in parallel
	return func(c call) (*fakeResponse, error) {
		var b strings.Builder
		switch c.op {
		case "query_range":
			b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
			for s := range 3 {
				if s > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"metric":{"__name__":%q,"instance":"i-%d"},"values":[`, c.expr, s)
				for t, i := c.start, 0; !t.After(c.end); t, i = t.Add(c.step), i+1 {
					if i > 0 {
						b.WriteByte(',')
					}
					mu.Lock()
					*points++
					mu.Unlock()
					fmt.Fprintf(&b, `[%d,"%d"]`, t.Unix(), (t.Unix()/int64(c.step.Seconds())+int64(s)*7+int64(len(c.expr)))%101)
				}
				b.WriteString(`]}`)
			}
			b.WriteString(`]}}`)
		case "query":
			fmt.Fprintf(&b, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"1"]}]}}`, c.t.Unix())
		default:
			b.WriteString(`{"status":"success","data":["a","b"]}`)
		}
		return okJSON(b.String()), nil
	}
}

func datasourceWith(t *testing.T, jsonData string, fake *fakeUpstream) *Datasource {
	t.Helper()
	s := testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9"` + jsonData + `}`)
	d, err := New(context.Background(), s, func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
		return fake, nil
	})
	if err != nil || d.setupErr != nil {
		t.Fatalf("%v %v", err, d.setupErr)
	}
	return d
}

// framesWithoutStats is a response's frames as JSON, without the per-request statistics
// (how the cache served it) and the request's description (the range it asked for), the
// things allowed to differ.
func framesWithoutStats(t *testing.T, dr backend.DataResponse) string {
	t.Helper()
	if dr.Error != nil {
		t.Fatal(dr.Error)
	}
	var out []string
	for _, f := range dr.Frames {
		if f.Meta != nil {
			f.Meta.Stats, f.Meta.ExecutedQueryString = nil, ""
		}
		js, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(js))
	}
	return strings.Join(out, "\n")
}

// randomPanels are 2–6 range panels over three metrics (fixed seed).
func randomPanels(rng *rand.Rand, minPoints, spread int) []backend.DataQuery {
	var panels []backend.DataQuery
	for i := range 2 + rng.IntN(5) {
		q := dataQuery(fmt.Sprintf("P%d", i), fmt.Sprintf(`{"expr":"metric_%d","range":true}`, rng.IntN(3)))
		q.MaxDataPoints = int64(minPoints + rng.IntN(spread))
		panels = append(panels, q)
	}
	return panels
}

// TestRefreshedPanelsMatchUncached: dashboards of random panels (fixed seeds) loaded,
// then refreshed and zoomed, through a cached data source that reuses no answer as it is
// (cacheFreshFor 0s) and an uncached one: frames are identical, and a refresh fetches a
// small share of the cold load's points.
func TestRefreshedPanelsMatchUncached(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			var cachedPoints, plainPoints int
			cachedUp, plainUp := &fakeUpstream{answer: generated(&cachedPoints)}, &fakeUpstream{answer: generated(&plainPoints)}
			cached, plain := datasourceWith(t, `,"cacheFreshFor":"0s"`, cachedUp), datasourceWith(t, `,"cacheSizeMiB":0`, plainUp)
			panels := randomPanels(rng, 200, 1200)
			now := time.Now().UTC()
			span := time.Duration(1+rng.IntN(12)) * time.Hour
			var coldPoints int
			for step := range 6 {
				// cold load, refreshes 30 s apart, then a zoom out and a zoom in.
				switch step {
				case 4:
					span *= 2
				case 5:
					span /= 3
				}
				at := now.Add(time.Duration(step) * 30 * time.Second)
				for i := range panels {
					panels[i].TimeRange = backend.TimeRange{From: at.Add(-span), To: at}
				}
				before := cachedPoints
				got, err := cached.QueryData(context.Background(), &backend.QueryDataRequest{Queries: panels})
				if err != nil {
					t.Fatal(err)
				}
				want, err := plain.QueryData(context.Background(), &backend.QueryDataRequest{Queries: panels})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range panels {
					if g, w := framesWithoutStats(t, got.Responses[p.RefID]), framesWithoutStats(t, want.Responses[p.RefID]); g != w {
						t.Fatalf("load %d panel %s: cached frames differ from uncached\n got %.2000s\nwant %.2000s", step, p.RefID, g, w)
					}
				}
				fetched := cachedPoints - before
				switch {
				case step == 0:
					coldPoints = fetched
				case step < 4 && fetched*10 > coldPoints:
					t.Errorf("refresh %d fetched %d points, more than 10%% of the cold load's %d", step, fetched, coldPoints)
				}
			}
		})
	}
}

// TestRefreshWithinOneStep: with a new data source's settings, panels refreshed while
// their time range moves on (wall clock within one minute) are an uncached query's frames
// for their range or for that range less its newest step; once the range has moved two
// steps, the cache fetches and the frames are the uncached ones again, new points included.
func TestRefreshWithinOneStep(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			var cachedPoints, plainPoints int
			cached := datasourceWith(t, "", &fakeUpstream{answer: generated(&cachedPoints)})
			plain := datasourceWith(t, `,"cacheSizeMiB":0`, &fakeUpstream{answer: generated(&plainPoints)})
			// Up to 12 h at 1000+ points: every panel's step is the 60 s min step.
			panels := randomPanels(rng, 1000, 500)
			span := time.Duration(1+rng.IntN(12)) * time.Hour
			now := time.Now().UTC()
			load := func(ds *Datasource, at time.Time) map[string]string {
				qs := slices.Clone(panels)
				for i := range qs {
					qs[i].TimeRange = backend.TimeRange{From: now.Add(-span), To: at}
				}
				resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]string{}
				for _, p := range qs {
					out[p.RefID] = framesWithoutStats(t, resp.Responses[p.RefID])
				}
				return out
			}
			for _, tc := range []struct {
				after     time.Duration
				mayLag    bool // the newest step may be left out
				wantFetch bool
			}{{0, false, true}, {30 * time.Second, true, false}, {60 * time.Second, true, false}, {120 * time.Second, false, true}} {
				before := cachedPoints
				at := now.Add(tc.after)
				got, full, short := load(cached, at), load(plain, at), load(plain, at.Add(-time.Minute))
				for _, p := range panels {
					if g := got[p.RefID]; g != full[p.RefID] && (!tc.mayLag || g != short[p.RefID]) {
						t.Fatalf("+%s panel %s: frames are not an uncached query's\n got %.1500s\nwant %.1500s", tc.after, p.RefID, g, full[p.RefID])
					}
				}
				if fetched := cachedPoints > before; fetched != tc.wantFetch {
					t.Errorf("+%s: fetched upstream %v, want %v", tc.after, fetched, tc.wantFetch)
				}
			}
		})
	}
}

// TestCacheBypass: alert evaluations and X-Cache-Skip always ask upstream; a cache
// size of 0 turns the cache off.
func TestCacheBypass(t *testing.T) {
	for _, tc := range []struct {
		name     string
		json     string
		headers  map[string]string
		wantFull int
	}{
		{"dashboard refresh is served from the cache", "", nil, 1},
		{"alert evaluation", "", map[string]string{"FromAlert": "true"}, 2},
		{"X-Cache-Skip", "", map[string]string{"http_X-Cache-Skip": "true"}, 2},
		{"cache off", `,"cacheSizeMiB":0`, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var points int
			fake := &fakeUpstream{answer: generated(&points)}
			d := datasourceWith(t, tc.json, fake)
			q := dataQuery("A", `{"expr":"m","range":true}`)
			q.TimeRange = backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}
			for range 2 {
				resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Headers: tc.headers, Queries: []backend.DataQuery{q}})
				if err != nil || resp.Responses["A"].Error != nil {
					t.Fatal(err, resp.Responses["A"].Error)
				}
			}
			full := 0
			for _, c := range fake.Calls() {
				if c.op == "query_range" && c.end.Sub(c.start) > 30*time.Minute {
					full++
				}
			}
			if full != tc.wantFull {
				t.Errorf("%d full-range upstream calls, want %d (calls %+v)", full, tc.wantFull, fake.Calls())
			}
		})
	}
}

// TestLookupsCachedBriefly: a variable's label-values lookup repeated within its TTL
// is answered without an upstream call, unless the request says X-Cache-Skip.
func TestLookupsCachedBriefly(t *testing.T) {
	var points int
	fake := &fakeUpstream{answer: generated(&points)}
	d := datasourceWith(t, "", fake)
	rc := resourceCall{method: "GET", path: "api/v1/label/job/values", query: fmt.Sprintf("start=%d&end=%d", time.Now().Add(-time.Hour).Unix(), time.Now().Unix())}
	for range 3 {
		if resp := callResource(t, d, rc); resp.Status != 200 || !strings.Contains(string(resp.Body), `"a"`) {
			t.Fatalf("status %d body %s", resp.Status, resp.Body)
		}
	}
	if n := len(fake.Calls()); n != 1 {
		t.Errorf("%d upstream calls for 3 identical lookups, want 1", n)
	}
	rc.headers = map[string][]string{"X-Cache-Skip": {"true"}}
	callResource(t, d, rc)
	if n := len(fake.Calls()); n != 2 {
		t.Errorf("X-Cache-Skip: %d upstream calls, want 2", n)
	}
	other := datasourceWith(t, "", fake)
	rc.headers = nil
	callResource(t, other, rc)
	if n := len(fake.Calls()); n != 3 {
		t.Errorf("another data source was answered from this one's cache: %d calls, want 3", n)
	}
}

// TestInstantPanelsShareOneCall: stat panels of several viewers asking the same instant
// query within the fresh period cost one upstream call; with the period off, one each.
func TestInstantPanelsShareOneCall(t *testing.T) {
	for _, tc := range []struct {
		json      string
		wantCalls int
	}{{"", 1}, {`,"cacheFreshFor":"0s"`, 3}} {
		var points int
		fake := &fakeUpstream{answer: generated(&points)}
		d := datasourceWith(t, tc.json, fake)
		for range 3 {
			q := dataQuery("S", `{"expr":"sum(up)","instant":true}`)
			q.TimeRange = backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil || resp.Responses["S"].Error != nil || len(resp.Responses["S"].Frames) == 0 {
				t.Fatal(err, resp.Responses["S"].Error)
			}
		}
		if n := len(fake.Calls()); n != tc.wantCalls {
			t.Errorf("settings %q: %d upstream calls, want %d", tc.json, n, tc.wantCalls)
		}
	}
}

// TestOverLimitFailuresKept: a panel refused for one of CloudWatch's per-query limits (422,
// not throttling) gets the same error again on a refresh within the cache's bound without
// a call, saying so; throttling and server errors are asked again.
func TestOverLimitFailuresKept(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       *promclient.APIError
		wantCalls int
	}{
		{"execution limit", &promclient.APIError{Status: 422, Type: "execution", Message: "query timed out in query execution"}, 1},
		{"throttled", &promclient.APIError{Status: 422, Type: "ThrottlingException", Message: "Rate exceeded", Throttled: true}, 2},
		{"server error", &promclient.APIError{Status: 503, Type: "unavailable", Message: "try again"}, 2},
	} {
		for _, qt := range []string{`"range":true`, `"instant":true`} {
			t.Run(tc.name+" "+qt, func(t *testing.T) {
				fake := &fakeUpstream{answer: func(call) (*fakeResponse, error) { return nil, tc.err }}
				d := datasourceWith(t, "", fake)
				q := dataQuery("A", `{"expr":"m",`+qt+`}`)
				q.TimeRange = backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}
				var msgs []string
				for range 2 {
					resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
					if err != nil || resp.Responses["A"].Error == nil {
						t.Fatalf("%v, %v: want the upstream error", err, resp.Responses["A"].Error)
					}
					msgs = append(msgs, resp.Responses["A"].Error.Error())
				}
				if n := len(fake.Calls()); n != tc.wantCalls {
					t.Errorf("%d upstream calls, want %d", n, tc.wantCalls)
				}
				if kept := strings.Contains(msgs[1], "kept like a cached answer"); kept != (tc.wantCalls == 1) || !strings.Contains(msgs[1], tc.err.Message) {
					t.Errorf("second answer %q: says kept %v", msgs[1], kept)
				}
			})
		}
	}
}
