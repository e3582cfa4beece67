package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

const storePassword = "store-password-4b1d"

// withStore adds jsonData.sharedStore (store's fields) and the store's password to s.
func withStore(t *testing.T, s backend.DataSourceInstanceSettings, store map[string]any) backend.DataSourceInstanceSettings {
	t.Helper()
	jd := map[string]any{}
	if err := json.Unmarshal(s.JSONData, &jd); err != nil {
		t.Fatal(err)
	}
	jd["sharedStore"] = store
	s.JSONData, _ = json.Marshal(jd)
	secure := map[string]string{"sharedStorePassword": storePassword}
	for k, v := range s.DecryptedSecureJSONData {
		secure[k] = v
	}
	s.DecryptedSecureJSONData = secure
	return s
}

// inOrg is a request's context from Grafana org org, as the SDK gives it to the instance factory.
func inOrg(org int64) context.Context {
	return backend.WithPluginContext(context.Background(), backend.PluginContext{OrgID: org})
}

// openTestStore opens the store handle of the data source s in org, as New does.
func openTestStore(t *testing.T, org int64, s backend.DataSourceInstanceSettings) *sharedStore {
	t.Helper()
	ms, err := models.LoadSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	h := openStore(inOrg(org), s.UID, ms)
	if h.broken != nil {
		t.Fatal(h.broken)
	}
	t.Cleanup(h.close)
	return h
}

// TestStoreNamespaceIsolation: a replica (same org, uid and credentials) reads what another
// stored; a data source differing in org, uid or any part of its credential identity never
// does, even with the same entry name on the same store.
func TestStoreNamespaceIsolation(t *testing.T) {
	srv := storetest.Start(t)
	base := withStore(t, testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9",
		"assumeRoleArn":"arn:aws:iam::123456789012:role/grafana","externalId":"team-a"}`), map[string]any{"addresses": []string{srv.Addr}})
	jsonWith := func(key, val string) func(*backend.DataSourceInstanceSettings) {
		return func(s *backend.DataSourceInstanceSettings) {
			jd := map[string]any{}
			_ = json.Unmarshal(s.JSONData, &jd)
			jd[key] = val
			s.JSONData, _ = json.Marshal(jd)
		}
	}
	tests := []struct {
		name   string
		org    int64
		change func(*backend.DataSourceInstanceSettings)
		shared bool
	}{
		{name: "a replica reads it", org: 1, shared: true},
		{name: "another org with the same uid", org: 2},
		{name: "another uid", org: 1, change: func(s *backend.DataSourceInstanceSettings) { s.UID = "other" }},
		{name: "another access key", org: 1, change: func(s *backend.DataSourceInstanceSettings) {
			s.DecryptedSecureJSONData = map[string]string{"accessKey": "AKIDOTHERUSER", "secretKey": "x", "sharedStorePassword": storePassword}
		}},
		{name: "another role", org: 1, change: jsonWith("assumeRoleArn", "arn:aws:iam::123456789012:role/other")},
		{name: "another external id", org: 1, change: jsonWith("externalId", "team-b")},
		{name: "another endpoint", org: 1, change: jsonWith("endpoint", "http://127.0.0.1:10")},
		{name: "another auth type", org: 1, change: jsonWith("authType", "default")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writer := openTestStore(t, 1, base)
			other := base
			if tt.change != nil {
				tt.change(&other)
			}
			reader := openTestStore(t, tt.org, other)
			ctx := context.Background()
			name := "labels\x00" + t.Name()
			if _, _, storeErr, err := writer.peer.Once(ctx, name, time.Minute, func(context.Context) ([]byte, error) { return []byte("writer's"), nil }); storeErr != nil || err != nil {
				t.Fatal(storeErr, err)
			}
			val, shared, storeErr, err := reader.peer.Once(ctx, name, time.Minute, func(context.Context) ([]byte, error) { return []byte("reader's"), nil })
			if storeErr != nil || err != nil {
				t.Fatal(storeErr, err)
			}
			want := "reader's"
			if tt.shared {
				want = "writer's"
			}
			if string(val) != want || shared != tt.shared {
				t.Errorf("read %q (shared %t), want %q (shared %t)", val, shared, want, tt.shared)
			}
		})
	}
}

// TestStoreUnusableWithoutOrg: without the org, two orgs' data sources of one uid would
// share keys, so the store is not used and the reason is given.
func TestStoreUnusableWithoutOrg(t *testing.T) {
	srv := storetest.Start(t)
	ms, err := models.LoadSettings(withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}}))
	if err != nil {
		t.Fatal(err)
	}
	h := openStore(context.Background(), "test", ms)
	t.Cleanup(h.close)
	if h.peer != nil || h.broken == nil || !strings.Contains(h.broken.Error(), "org id") {
		t.Fatalf("peer %v, broken %v: want no peer and the missing org named", h.peer, h.broken)
	}
}

// TestStoreOutageNotice: while the store is up, each response counts its hits and misses;
// once it fails, every response is still answered and says the store is unavailable and
// why, and only the first carries the notice; after it recovers and fails anew, the
// notice comes once more.
func TestStoreOutageNotice(t *testing.T) {
	srv := storetest.Start(t)
	h := openTestStore(t, 1, withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}}))
	// respond is one query's response: a lookup through the store, then its annotation.
	respond := func() backend.DataResponse {
		ctx, use := withStoreUse(context.Background())
		val, _, _, err := h.peer.Once(ctx, "labels\x00up", time.Minute, func(context.Context) ([]byte, error) { return []byte("answer"), nil })
		if err != nil || string(val) != "answer" {
			t.Fatalf("lookup answered %q, %v", val, err)
		}
		resp := backend.DataResponse{Frames: data.Frames{data.NewFrame("")}}
		h.annotate(&resp, use)
		return resp
	}
	stats := func(r backend.DataResponse) map[string]float64 {
		out := map[string]float64{}
		for _, s := range r.Frames[0].Meta.Stats {
			out[s.DisplayName] = s.Value
		}
		return out
	}
	unavailable := func(r backend.DataResponse) string {
		for name := range stats(r) {
			if strings.HasPrefix(name, storeStatPrefix+"unavailable: ") {
				return name
			}
		}
		return ""
	}
	notices := func(rs []backend.DataResponse) (n int, text string) {
		for _, r := range rs {
			for _, no := range r.Frames[0].Meta.Notices {
				n, text = n+1, no.Text
			}
		}
		return n, text
	}
	outage := func(what string) {
		t.Helper()
		var rs []backend.DataResponse
		for range 3 {
			rs = append(rs, respond())
		}
		for _, r := range rs {
			if name := unavailable(r); !strings.Contains(name, what) {
				t.Errorf("stats %v: want the store unavailable, %s", stats(r), what)
			}
		}
		if n, text := notices(rs); n != 1 || !strings.HasPrefix(text, "shared cache unavailable: ") || !strings.Contains(text, what) {
			t.Errorf("%d notices (last %q) over 3 responses, want one naming %s", n, text, what)
		}
	}

	first, second := respond(), respond()
	if s := stats(first); s[storeStatPrefix+"miss"] != 1 || s[storeStatPrefix+"hit"] != 0 {
		t.Errorf("first lookup's stats %v: want one miss", s)
	}
	if s := stats(second); s[storeStatPrefix+"hit"] != 1 || s[storeStatPrefix+"miss"] != 0 {
		t.Errorf("second lookup's stats %v: want one hit", s)
	}
	if n, _ := notices([]backend.DataResponse{first, second}); n != 0 {
		t.Errorf("%d notices while the store is up", n)
	}

	srv.Stop()
	outage("refused")

	srv.Restart()
	deadline := time.Now().Add(10 * time.Second) // the backoff, doubling from 250 ms, lets a probe through
	for {
		r := respond()
		if unavailable(r) == "" {
			if n, _ := notices([]backend.DataResponse{r}); n != 0 {
				t.Errorf("a notice after the store recovered: %v", r.Frames[0].Meta.Notices)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store was not used again within 10s of its restart: %v", stats(r))
		}
		time.Sleep(100 * time.Millisecond)
	}

	srv.Pause()
	t.Cleanup(srv.Resume)
	outage("timeout")
}

// TestStoreHealth: Save & test reports the store (reachable, or the error and its fix) as
// a warning that leaves the AWS checks' status alone, and never shows its password.
func TestStoreHealth(t *testing.T) {
	const region = "us-east-1"
	srv := storetest.Start(t, "--requirepass", storePassword)
	down := storetest.Start(t)
	down.Stop()
	tests := []struct {
		name  string
		store map[string]any
		pass  string
		want  []string
	}{
		{name: "reachable", store: map[string]any{"addresses": []string{srv.Addr}}, pass: storePassword,
			want: []string{"Connected to CloudWatch", "shared store reachable: Redis", "round trip", "The account is unknown"}},
		{name: "wrong password", store: map[string]any{"addresses": []string{srv.Addr}}, pass: "not-" + storePassword,
			want: []string{"Connected to CloudWatch", "Warning: shared cache unavailable", "WRONGPASS", "secureJsonData.sharedStorePassword", "panels work without it"}},
		{name: "down", store: map[string]any{"addresses": []string{down.Addr}}, pass: storePassword,
			want: []string{"Connected to CloudWatch", "Warning: shared cache unavailable", "refused", "jsonData.sharedStore.addresses"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := (&fakeCloudWatch{region: region}).start(t)
			s := withStore(t, f.settings(region, fakeAccessKey, fakeSecretKey), tt.store)
			s.DecryptedSecureJSONData["sharedStorePassword"] = tt.pass
			d := newRealDatasource(t, inOrg(1), s)
			res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("health: %v %s", res.Status, res.Message)
			if res.Status != backend.HealthStatusOk {
				t.Errorf("status %v: the store must not fail the AWS checks", res.Status)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Message, w) {
					t.Errorf("message lacks %q", w)
				}
			}
			if strings.Contains(res.Message, storePassword) {
				t.Errorf("message leaks the store's password")
			}
		})
	}
}

// TestStoreBadSettings: a sharedStore setting that is wrong is named, with its fix, by
// Save & test and by every query, as the plugin's other settings are.
func TestStoreBadSettings(t *testing.T) {
	f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	s := withStore(t, f.settings("us-east-1", fakeAccessKey, fakeSecretKey), map[string]any{"addresses": []string{"redis.internal"}, "timeout": "soon"})
	d := newRealDatasource(t, inOrg(1), s)
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A",
		JSON: []byte(`{"expr":"up","range":true}`), TimeRange: backend.TimeRange{From: time.Unix(0, 0), To: time.Unix(3600, 0)}}}})
	for what, msg := range map[string]string{"Save & test": res.Message, "query": resp.Responses["A"].Error.Error()} {
		for _, w := range []string{"jsonData.sharedStore.addresses", "redis.internal:6379", "jsonData.sharedStore.timeout", "50ms"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s's message %q lacks %q", what, msg, w)
			}
		}
		if strings.Contains(msg, storePassword) {
			t.Errorf("%s's message leaks the store's password", what)
		}
	}
	if res.Status != backend.HealthStatusError || f.requests.Load() != 0 {
		t.Errorf("status %v after %d requests: want an error before any request", res.Status, f.requests.Load())
	}
}

// TestStoreAccount: the budget's account is STS's answer once it comes, the role ARN's
// until then; a failed lookup is not repeated on every request, but is after accountRetry.
func TestStoreAccount(t *testing.T) {
	var calls int
	answer := func() (string, error) { return "", errors.New("sts down") }
	a := account{fallback: "123456789012", lookup: func(context.Context) (string, error) {
		calls++
		return answer()
	}}
	ctx := context.Background()
	for range 3 {
		if id, from := a.get(ctx); id != "123456789012" || from != "the role ARN" {
			t.Fatalf("account %q from %q while STS fails: want the role ARN's", id, from)
		}
	}
	if calls != 1 {
		t.Fatalf("%d lookups within accountRetry of a failure, want 1", calls)
	}
	if d := a.describe(ctx); !strings.Contains(d, "123456789012 (from the role ARN)") || !strings.Contains(d, "sts down") {
		t.Errorf("describe = %q: want the role's account and STS's failure", d)
	}
	a.next = time.Now() // accountRetry has passed
	answer = func() (string, error) { return "210987654321", nil }
	for range 3 {
		if id, from := a.get(ctx); id != "210987654321" || from != "sts:GetCallerIdentity" {
			t.Fatalf("account %q from %q: want STS's", id, from)
		}
	}
	if calls != 2 {
		t.Errorf("%d lookups, want 2: STS's answer is kept", calls)
	}
	var unknown account
	if d := unknown.describe(ctx); !strings.Contains(d, "unknown") || !strings.Contains(d, "per credential") {
		t.Errorf("describe without an account = %q", d)
	}
}

// TestStoreBudgetPerAccount: two data sources (other uids, other credentials) of one
// account draw on one budget in the store; another account's is its own.
func TestStoreBudgetPerAccount(t *testing.T) {
	srv := storetest.Start(t)
	source := func(uid, role string) *sharedStore {
		s := withStore(t, testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","assumeRoleArn":"`+role+`"}`),
			map[string]any{"addresses": []string{srv.Addr}, "accountShare": 10})
		s.UID = uid
		return openTestStore(t, 1, s)
	}
	a := source("a", "arn:aws:iam::111111111111:role/team-a").budget("us-east-1")
	b := source("b", "arn:aws:iam::111111111111:role/team-b").budget("us-east-1")
	other := source("c", "arn:aws:iam::222222222222:role/team-c").budget("us-east-1")
	ctx := context.Background()
	// 10% of the account's 30 concurrent queries: 3 slots, whoever takes them.
	for i := range 3 {
		release, _, err := []promclient.AccountBudget{a, b}[i%2].Take(ctx, promclient.ClassQuery, 1)
		if err != nil || release == nil {
			t.Fatalf("take %d: %v", i, err)
		}
		defer release()
	}
	if release, wait, err := a.Take(ctx, promclient.ClassQuery, 1); err != nil || release != nil || wait <= 0 {
		t.Errorf("a fourth concurrent query of the account: release %v, wait %v, %v: want denied with a wait", release != nil, wait, err)
	}
	if release, _, err := other.Take(ctx, promclient.ClassQuery, 1); err != nil || release == nil {
		t.Errorf("another account's query: %v: want granted from its own budget", err)
	} else {
		release()
	}
}

// TestStoreOutageQueries: panels through the real client, its account budget in a real
// store, while the store is up, stopped, restarted and paused: every query is answered,
// every response's stats say the store's state, and each outage's first response alone
// carries the notice.
func TestStoreOutageQueries(t *testing.T) {
	srv := storetest.Start(t)
	f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	d := newRealDatasource(t, inOrg(1), withStore(t, f.settings("us-east-1", fakeAccessKey, fakeSecretKey), map[string]any{"addresses": []string{srv.Addr}}))
	if d.setupErr != nil {
		t.Fatal(d.setupErr)
	}
	var n int
	// panel is one request of one instant query, new each time so no cache answers it.
	panel := func() (state string, notices []string) {
		t.Helper()
		n++
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A",
			JSON: []byte(fmt.Sprintf(`{"expr":"1+%d","instant":true,"range":false}`, n)), TimeRange: backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}}}})
		if err != nil {
			t.Fatal(err)
		}
		dr := resp.Responses["A"]
		if dr.Error != nil || len(dr.Frames) == 0 {
			t.Fatalf("query %d not answered: %v", n, dr.Error)
		}
		for _, s := range dr.Frames[0].Meta.Stats {
			if strings.HasPrefix(s.DisplayName, storeStatPrefix) {
				state += s.DisplayName + ";"
			}
		}
		for _, no := range dr.Frames[0].Meta.Notices {
			notices = append(notices, no.Text)
		}
		return state, notices
	}
	outage := func(what string) {
		t.Helper()
		var all []string
		for range 3 {
			state, notices := panel()
			if !strings.Contains(state, storeStatPrefix+"unavailable: ") || !strings.Contains(state, what) {
				t.Errorf("stats %q: want the store unavailable, %s", state, what)
			}
			all = append(all, notices...)
		}
		if len(all) != 1 || !strings.HasPrefix(all[0], "shared cache unavailable: ") || !strings.Contains(all[0], what) {
			t.Errorf("notices %q over 3 panels: want one naming %s", all, what)
		}
	}

	for range 2 {
		if state, notices := panel(); state != storeStatPrefix+"hit;"+storeStatPrefix+"miss;" || len(notices) != 0 {
			t.Fatalf("store up: stats %q, notices %q", state, notices)
		}
	}
	srv.Stop()
	outage("refused")
	srv.Restart()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		state, notices := panel()
		if !strings.Contains(state, "unavailable") {
			if len(notices) != 0 {
				t.Errorf("a notice once the store is back: %q", notices)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store was not used again within 10s of its restart: %q", state)
		}
	}
	srv.Pause()
	t.Cleanup(srv.Resume)
	outage("timeout")
}
