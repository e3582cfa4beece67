package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
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

// TestStoreInstallationIsolation: two Grafana installations (dev and prod, instance roles
// of different accounts) sharing a store, with the default chain, the default prefix, org
// 1 and the same provisioned uid, never read each other's entries: their app URLs differ.
// Replicas of one installation (one root_url) do.
func TestStoreInstallationIsolation(t *testing.T) {
	srv := storetest.Start(t)
	s := withStore(t, testSettings(`{"authType":"default","defaultRegion":"us-east-1"}`), map[string]any{"addresses": []string{srv.Addr}})
	s.UID = "cloudwatch"
	ms, err := models.LoadSettings(s)
	if err != nil {
		t.Fatal(err)
	}
	in := func(appURL string) *sharedStore {
		ctx := backend.WithGrafanaConfig(inOrg(1), backend.NewGrafanaCfg(map[string]string{backend.AppURL: appURL}))
		h := openStore(ctx, s.UID, ms)
		if h.broken != nil {
			t.Fatal(h.broken)
		}
		t.Cleanup(h.close)
		return h
	}
	ctx := context.Background()
	for _, tc := range []struct {
		reader string
		shared bool
	}{
		{reader: "https://grafana-prod.example.com/", shared: true},
		{reader: "https://grafana-dev.example.com/"},
	} {
		name := "labels\x00instance\x00" + tc.reader
		if _, _, storeErr, err := in("https://grafana-prod.example.com/").peer.Once(ctx, name, time.Minute, func(context.Context) ([]byte, error) { return []byte("prod's"), nil }); storeErr != nil || err != nil {
			t.Fatal(storeErr, err)
		}
		val, shared, storeErr, err := in(tc.reader).peer.Once(ctx, name, time.Minute, func(context.Context) ([]byte, error) { return []byte("own"), nil })
		if storeErr != nil || err != nil || shared != tc.shared || (string(val) == "prod's") != tc.shared {
			t.Errorf("reader at %s: %q, shared %v (%v, %v); want shared %v", tc.reader, val, shared, storeErr, err, tc.shared)
		}
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
		h.annotate(&resp, use, false)
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

// respondThrough is one query's response through h: a lookup through the store, then its
// annotation (unseen: an alert evaluation's); its notices and the stat naming the store's
// unavailability ("" when none).
func respondThrough(t *testing.T, h *sharedStore, unseen bool) (notices []data.Notice, unavailable string) {
	t.Helper()
	ctx, use := withStoreUse(context.Background())
	_, _, _ = h.peer.GetExtent(ctx, "range\x00up") // its outcome is what use recorded
	resp := backend.DataResponse{Frames: data.Frames{data.NewFrame("")}}
	h.annotate(&resp, use, unseen)
	for _, s := range resp.Frames[0].Meta.Stats {
		if strings.HasPrefix(s.DisplayName, storeStatPrefix+"unavailable: ") {
			unavailable = s.DisplayName
		}
	}
	return resp.Frames[0].Meta.Notices, unavailable
}

// TestStoreOutageNoticeSkipsAlerts: an alert evaluation's response, which no one reads,
// says in its stats that the store is unavailable but does not take the outage's one
// notice: the next panel's response carries it.
func TestStoreOutageNoticeSkipsAlerts(t *testing.T) {
	srv := storetest.Start(t)
	h := openTestStore(t, 1, withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}}))
	srv.Stop()
	for range 2 {
		if notices, why := respondThrough(t, h, true); len(notices) != 0 || !strings.Contains(why, "refused") {
			t.Errorf("alert's response: notices %v, stat %q: want no notice and the store refused", notices, why)
		}
	}
	notices, why := respondThrough(t, h, false)
	if len(notices) != 1 || !strings.Contains(notices[0].Text, "refused") || why == "" {
		t.Errorf("the first panel's response after alerts: notices %v, stat %q: want the outage's notice", notices, why)
	}
	if notices, _ := respondThrough(t, h, false); len(notices) != 0 {
		t.Errorf("a second notice: %v", notices)
	}
}

// TestStoreDisposeWaitsForRequests: Grafana disposes a replaced instance while its
// requests may still run: the store stays open until they end, so their slots go back to
// the account's budget (the new instance gets them) and they report no outage; then it is
// closed, and a late call meets ErrClosed, no outage either.
func TestStoreDisposeWaitsForRequests(t *testing.T) {
	srv := storetest.Start(t)
	jd := `{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9"}`
	source := func() *sharedStore {
		return openTestStore(t, 1, withStore(t, testSettings(jd), map[string]any{"addresses": []string{srv.Addr}, "accountShare": 4})) // one concurrent query
	}
	old := source()
	leave := old.enter() // a request under way
	release, _, err := old.budget("us-east-1").Take(context.Background(), promclient.ClassQuery, 1)
	if err != nil || release == nil {
		t.Fatalf("the request's slot: %v", err)
	}
	old.close() // Dispose
	if notices, why := respondThrough(t, old, false); len(notices) != 0 || why != "" {
		t.Errorf("a request of the disposed instance: notices %v, stat %q: want the store still in use", notices, why)
	}
	release()
	leave()
	nu := source()
	// The slot is what is tested: a rate denial right after the old request's call (one
	// call per 1/12 s at this share) is waited out once.
	r, wait, err := nu.budget("us-east-1").Take(context.Background(), promclient.ClassQuery, 1)
	if r == nil && err == nil && wait > 0 && wait < time.Second {
		time.Sleep(wait)
		r, _, err = nu.budget("us-east-1").Take(context.Background(), promclient.ClassQuery, 1)
	}
	if err != nil || r == nil {
		t.Errorf("the new instance's take: %v: want the slot the old request gave back", err)
	} else {
		r()
	}
	if _, _, err := old.peer.GetExtent(context.Background(), "x"); !errors.Is(err, sharedstore.ErrClosed) {
		t.Errorf("a call after the last request left: %v: want the store closed", err)
	}
	if notices, why := respondThrough(t, old, false); len(notices) != 0 || why != "" {
		t.Errorf("after close: notices %v, stat %q: closing is no outage", notices, why)
	}
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
			want: []string{"Connected to CloudWatch", "shared store reachable: Redis", "round trip", "shared per credential"}},
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

// TestStoreHealthOwnDeadline: Save & test's store check has its own deadline, not what
// the AWS checks left of Save & test's (here none), and does not wait for STS, which never
// answers: it reports the store reachable and the account pending.
func TestStoreHealthOwnDeadline(t *testing.T) {
	srv := storetest.Start(t)
	h := openTestStore(t, 1, withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}}))
	blocked := make(chan struct{})
	t.Cleanup(func() { close(blocked) })
	h.account.lookup = func(ctx context.Context) (string, error) {
		select {
		case <-ctx.Done():
		case <-blocked:
		}
		return "", errors.New("sts unreachable")
	}
	spent, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	msg := h.health(spent)
	for _, w := range []string{"shared store reachable: Redis", "The account is pending"} {
		if !strings.Contains(msg, w) {
			t.Errorf("store check %q lacks %q", msg, w)
		}
	}
}

// TestStoreHealthAccount: at a custom endpoint that serves STS too, as the emulator does,
// the account is never asked (its answer could claim any account): Save & test says the
// limits are shared per credential.
func TestStoreHealthAccount(t *testing.T) {
	srv := storetest.Start(t)
	f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	cw := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: strings.TrimPrefix(f.url, "http://")})
	var asked atomic.Int64
	// The data source's endpoint serves STS too, as the emulator does.
	both := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/" {
			_ = r.ParseForm()
			if r.Form.Get("Action") == "GetCallerIdentity" {
				asked.Add(1)
				w.Header().Set("Content-Type", "text/xml")
				fmt.Fprint(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>
<Arn>arn:aws:iam::123456789012:user/grafana</Arn><UserId>AIDAEXAMPLE</UserId><Account>123456789012</Account>
</GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`)
				return
			}
		}
		cw.ServeHTTP(w, r)
	}))
	t.Cleanup(both.Close)
	f.url = both.URL
	d := newRealDatasource(t, inOrg(1), withStore(t, f.settings("us-east-1", fakeAccessKey, fakeSecretKey), map[string]any{"addresses": []string{srv.Addr}}))
	for range 2 {
		res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if want := "The account is not looked up at a custom endpoint, whose answer proves nothing: CloudWatch's limits are shared per credential"; !strings.Contains(res.Message, want) {
			t.Fatalf("message %q lacks %q", res.Message, want)
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("STS asked %d times at a custom endpoint, want never", n)
	}
}

// TestStoreBadSettings: a wrong sharedStore setting turns the store off, not the data
// source: queries are answered, their stats say the store is off and why; Save & test's
// AWS checks run as without a store, and its store line is an error naming the setting and
// the fix.
func TestStoreBadSettings(t *testing.T) {
	f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	s := withStore(t, f.settings("us-east-1", fakeAccessKey, fakeSecretKey), map[string]any{"addresses": []string{"redis.internal"}, "timeout": "soon"})
	d := newRealDatasource(t, inOrg(1), s)
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "Connected to CloudWatch") || f.requests.Load() == 0 {
		t.Errorf("Save & test: %v %q after %d requests: want the AWS checks run and passed", res.Status, res.Message, f.requests.Load())
	}
	resp, _ := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A",
		JSON: []byte(`{"expr":"up","instant":true}`), TimeRange: backend.TimeRange{From: time.Unix(0, 0), To: time.Unix(3600, 0)}}}})
	a := resp.Responses["A"]
	if a.Error != nil || len(a.Frames) == 0 {
		t.Fatalf("query: %v, %d frames: want answered without the store", a.Error, len(a.Frames))
	}
	var off string
	for _, st := range a.Frames[0].Meta.Stats {
		if strings.HasPrefix(st.DisplayName, storeStatOff) {
			off = st.DisplayName
		}
	}
	storeLine := res.Message[strings.Index(res.Message, "Error: the shared store is off: ")+1:]
	for what, msg := range map[string]string{"Save & test's store line": storeLine, "the query's stat": off} {
		for _, w := range []string{"jsonData.sharedStore.addresses", "redis.internal:6379", "jsonData.sharedStore.timeout", "50ms"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %q lacks %q", what, msg, w)
			}
		}
		if strings.Contains(msg, storePassword) {
			t.Errorf("%s leaks the store's password", what)
		}
	}
	if len(a.Frames[0].Meta.Notices) != 0 {
		t.Errorf("notices %v: the setting's error is Save & test's and the stats', not every panel's", a.Frames[0].Meta.Notices)
	}
}

// confirmAccount has h's lookup answer acc (as AWS's STS would) and waits until the
// background lookup it starts has ended.
func confirmAccount(t *testing.T, a *account, acc string, err error) {
	t.Helper()
	done := make(chan struct{}, 1)
	a.mu.Lock()
	a.lookup = func(context.Context) (string, error) { return acc, err }
	a.asked = func() { done <- struct{}{} }
	a.next = time.Time{}
	a.mu.Unlock()
	a.get()
	select {
	case <-done:
	case <-time.After(accountLookupTimeout + time.Second):
		t.Fatal("the account's lookup never ended")
	}
}

// TestStoreAccount: the budget's account is STS's answer once it came; until then none
// (the credential scope), and no caller waits for STS, even one that never answers; a
// failed lookup is not repeated on every request, but is after accountRetry.
func TestStoreAccount(t *testing.T) {
	var calls atomic.Int32
	started, blocked := make(chan struct{}, 8), make(chan struct{})
	t.Cleanup(func() { close(blocked) })
	a := account{lookup: func(ctx context.Context) (string, error) {
		calls.Add(1)
		started <- struct{}{}
		select { // STS black-holed: no answer before the lookup's own deadline
		case <-ctx.Done():
		case <-blocked:
		}
		return "", errors.New("sts down")
	}}
	if id := a.get(); id != "" {
		t.Fatalf("account %q while STS has not answered: want none (the credential scope)", id)
	}
	<-started
	for range 3 {
		if id := a.get(); id != "" {
			t.Fatalf("account %q while STS has not answered: want none (the credential scope)", id)
		}
	}
	if d := a.describe(); !strings.Contains(d, "pending") || !strings.Contains(d, "per credential") {
		t.Errorf("describe while STS is asked = %q: want pending, per credential", d)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d lookups, want 1 under way", n)
	}

	var b account
	confirmAccount(t, &b, "", errors.New("sts down"))
	for range 3 {
		if id := b.get(); id != "" {
			t.Fatalf("account %q after STS failed: want none", id)
		}
	}
	if d := b.describe(); !strings.Contains(d, "unknown") || !strings.Contains(d, "sts down") || !strings.Contains(d, "per credential") {
		t.Errorf("describe after a failure = %q: want STS's failure, per credential", d)
	}
	b.mu.Lock()
	asking := b.asking
	b.mu.Unlock()
	if asking {
		t.Error("asked again within accountRetry of a failure")
	}
	confirmAccount(t, &b, "210987654321", nil) // accountRetry has passed
	if id := b.get(); id != "210987654321" {
		t.Fatalf("account %q: want STS's", id)
	}
	if d := b.describe(); !strings.Contains(d, "210987654321 (confirmed by sts:GetCallerIdentity)") {
		t.Errorf("describe = %q", d)
	}
	var odd account
	confirmAccount(t, &odd, "not-an-account", nil)
	if id := odd.get(); id != "" || !strings.Contains(odd.describe(), "not a 12-digit account id") {
		t.Errorf("account %q (%s) from a malformed answer: want none and why", id, odd.describe())
	}
	var custom account
	if d := custom.describe(); !strings.Contains(d, "custom endpoint") || !strings.Contains(d, "per credential") {
		t.Errorf("describe without a lookup = %q", d)
	}
}

// TestStoreBudgetNeverWaitsForSTS: with STS black-holed (the lookup answers only at its
// own deadline) and the store down, a query's budget answers within the query's deadline:
// the store's failure, for the client's fallback, not a wait for STS.
func TestStoreBudgetNeverWaitsForSTS(t *testing.T) {
	s := withStore(t, testSettings(""), map[string]any{"addresses": []string{"127.0.0.1:1"}}) // nothing listens
	h := openTestStore(t, 1, s)
	blocked := make(chan struct{})
	t.Cleanup(func() { close(blocked) })
	h.account.lookup = func(ctx context.Context) (string, error) {
		select {
		case <-ctx.Done():
		case <-blocked:
		}
		return "", errors.New("sts unreachable")
	}
	budget := h.budget("us-east-1")
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // under accountLookupTimeout
		release, _, err := budget.Take(ctx, promclient.ClassQuery, 1)
		if ctx.Err() != nil || release != nil || !sharedstore.IsUnavailable(err) {
			t.Errorf("take %d: context %v, granted %v, %v: want the store's failure before the deadline", i, ctx.Err(), release != nil, err)
		}
		cancel()
	}
}

// TestStoreBudgetPerAccount: data sources (other orgs, uids, credentials, key prefixes)
// of one account STS confirmed draw on one budget in the store; another account's is its
// own; and a data source whose account STS has not confirmed draws on its credentials'
// budget, never on the account its role ARN names.
func TestStoreBudgetPerAccount(t *testing.T) {
	srv := storetest.Start(t)
	source := func(org int64, uid, role, prefix, confirmed string, stsErr error) promclient.AccountBudget {
		s := withStore(t, testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","assumeRoleArn":"`+role+`"}`),
			map[string]any{"addresses": []string{srv.Addr}, "accountShare": 10, "keyPrefix": prefix})
		s.UID = uid
		h := openTestStore(t, org, s)
		confirmAccount(t, &h.account, confirmed, stsErr)
		return h.budget("us-east-1")
	}
	a := source(1, "a", "arn:aws:iam::111111111111:role/team-a", "inferscope:", "111111111111", nil)
	b := source(2, "b", "arn:aws:iam::111111111111:role/team-b", "team-b:", "111111111111", nil)
	other := source(1, "c", "arn:aws:iam::222222222222:role/team-c", "inferscope:", "222222222222", nil)
	claims := source(3, "d", "arn:aws:iam::111111111111:role/does-not-exist", "inferscope:", "", errors.New("AccessDenied"))
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
	for what, budget := range map[string]promclient.AccountBudget{"another account": other, "an unconfirmed role naming the account": claims} {
		if release, _, err := budget.Take(ctx, promclient.ClassQuery, 1); err != nil || release == nil {
			t.Errorf("%s's query: %v: want granted from its own budget", what, err)
		} else {
			release()
		}
	}
}

// TestStoreOutageQueries: panels while the store is up, stopped, restarted and paused,
// instant ones through the real client and its account budget in the store, range ones
// through the results cache's peer: every query is answered, every response's stats say
// the store's state, and each outage's first response alone carries the notice.
func TestStoreOutageQueries(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, store map[string]any) *Datasource
		model string // a new expression for each n, so that no local cache answers it
	}{
		{name: "instant panels through the account budget", build: func(t *testing.T, store map[string]any) *Datasource {
			f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
			return newRealDatasource(t, inOrg(1), withStore(t, f.settings("us-east-1", fakeAccessKey, fakeSecretKey), store))
		}, model: `{"expr":"1+%d","instant":true,"range":false}`},
		{name: "range panels through the results cache's peer", build: func(t *testing.T, store map[string]any) *Datasource {
			var points int
			d, err := New(inOrg(1), withStore(t, testSettings(""), store), func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
				return &fakeUpstream{answer: generated(&points)}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Dispose)
			return d
		}, model: `{"expr":"metric_%d","range":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := storetest.Start(t)
			d := tc.build(t, map[string]any{"addresses": []string{srv.Addr}})
			if d.setupErr != nil {
				t.Fatal(d.setupErr)
			}
			var n int
			panel := func() (state string, notices []string) {
				t.Helper()
				n++
				q := dataQuery("A", fmt.Sprintf(tc.model, n))
				q.TimeRange = backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}
				state, ns := storeState(t, context.Background(), d, q)
				for _, no := range ns {
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
		})
	}
}

// TestStoreReplicasShare: two replicas of one data source (same settings, org and uid) on
// one store: what the first fetched for a dashboard's range and stat panels and a label
// lookup, the
// second serves without any upstream call, with the same frames, its stats saying the
// store served it. A data source of another org with the same uid, or with other
// credentials, reads none of it and fetches all itself.
func TestStoreReplicasShare(t *testing.T) {
	srv := storetest.Start(t)
	tests := []struct {
		name   string
		org    int64
		change func(s backend.DataSourceInstanceSettings)
		shared bool
	}{
		{name: "replica", org: 1, shared: true},
		{name: "another org, same uid", org: 2},
		{name: "other credentials, same uid", org: 1, change: func(s backend.DataSourceInstanceSettings) {
			s.DecryptedSecureJSONData["accessKey"] = "AKIDANOTHERUSER"
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each case its own uid: no case reads another's entries.
			settings := func() backend.DataSourceInstanceSettings {
				s := withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}})
				s.UID = fmt.Sprintf("ds%d", i)
				return s
			}
			base, other := settings(), settings()
			if tt.change != nil {
				tt.change(other)
			}
			source := func(org int64, s backend.DataSourceInstanceSettings, up *fakeUpstream) *Datasource {
				d, err := New(inOrg(org), s, func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) { return up, nil })
				if err != nil || d.setupErr != nil {
					t.Fatal(err, d.setupErr)
				}
				t.Cleanup(d.Dispose)
				return d
			}
			var p1, p2 int
			up1, up2 := &fakeUpstream{answer: generatedAt(&p1)}, &fakeUpstream{answer: generatedAt(&p2)}
			first, second := source(1, base, up1), source(tt.org, other, up2)
			panels := append(randomPanels(rand.New(rand.NewPCG(7, 7)), 200, 800), dataQuery("I", `{"expr":"stat_0","instant":true,"range":false}`))
			now := time.Now().UTC()
			for i := range panels {
				panels[i].TimeRange = backend.TimeRange{From: now.Add(-6 * time.Hour), To: now}
			}
			load := func(d *Datasource) *backend.QueryDataResponse {
				resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: panels})
				if err != nil {
					t.Fatal(err)
				}
				callResource(t, d, resourceCall{method: "GET", path: "api/v1/labels"})
				return resp
			}
			want := load(first)
			if len(up1.Calls()) == 0 {
				t.Fatal("the first data source made no upstream call: nothing to share")
			}
			got := load(second)
			// Each expression's extent is read from the store at least once; panels of the
			// same expression may then be served by the replica's own near cache.
			var hits float64
			exprs := map[string]bool{}
			for _, p := range panels {
				exprs[string(p.JSON)[:strings.Index(string(p.JSON), ",")]] = true
				dr := got.Responses[p.RefID]
				for _, st := range dr.Frames[0].Meta.Stats {
					if st.DisplayName == storeStatPrefix+"hit" {
						hits += st.Value
					}
				}
				if g, w := framesWithoutStats(t, dr), framesWithoutStats(t, want.Responses[p.RefID]); g != w {
					t.Errorf("panel %s: the second data source's frames differ\n got %.1000s\nwant %.1000s", p.RefID, g, w)
				}
			}
			n1, n2 := len(up1.Calls()), len(up2.Calls())
			t.Logf("%d panels of %d expressions and a label lookup: upstream calls %d then %d, store hits %v", len(panels), len(exprs), n1, n2, hits)
			switch {
			case tt.shared && (n2 != 0 || hits < float64(len(exprs))):
				t.Errorf("the replica made %d upstream calls, want 0; its stats count %v store hits for %d expressions", n2, hits, len(exprs))
			case !tt.shared && (n2 != n1 || hits != 0):
				t.Errorf("made %d upstream calls (the first %d) and read %v entries from the store: want all fetched itself, none read", n2, n1, hits)
			}
		})
	}
}

// TestStoreReplicasShareAWSCaches: the alarms and inventory answers one replica fetched
// reach the other through the AWS caches' shared store (Shared.Store, as NewAWSAPI passes
// it): the second replica's alarms panel asks AWS nothing and shows the same frames.
func TestStoreReplicasShareAWSCaches(t *testing.T) {
	srv := storetest.Start(t)
	s := withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}})
	replica := func(fake *fakeAWS) *Datasource {
		d, err := New(inOrg(1), s, func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
			return &fakeUpstream{}, nil
		},
			WithAWS(func(_ context.Context, _ *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.API, error) {
				return awsapi.Cached(fake, awsCacheTTL, nil, sh.shareThrough(ep)), nil
			}))
		if err != nil || d.setupErr != nil {
			t.Fatal(err, d.setupErr)
		}
		t.Cleanup(d.Dispose)
		return d
	}
	aws1, aws2 := fullFake(), fullFake()
	want := runOne(t, replica(aws1), "alarms", `{}`)
	got := runOne(t, replica(aws2), "alarms", `{}`)
	if len(aws1.Calls()) == 0 {
		t.Fatal("the first replica asked AWS nothing: nothing to share")
	}
	if calls := aws2.Calls(); len(calls) != 0 {
		t.Errorf("the second replica asked AWS %v, want nothing", calls)
	}
	if g, w := framesWithoutStats(t, got), framesWithoutStats(t, want); g != w {
		t.Errorf("the second replica's frames differ\n got %.1500s\nwant %.1500s", g, w)
	}
}

// TestStoreFullNoticeOnce: a full store (maxmemory under noeviction) refuses writes but
// serves reads and does not back off. Panels stay answered and say why; a panel that did
// not write (a local hit) does not end the outage, so the notice comes once, and again
// only after a write succeeded and the store filled up anew.
func TestStoreFullNoticeOnce(t *testing.T) {
	srv := storetest.Start(t, "--maxmemory-policy", "noeviction")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	// fill puts the store over its maxmemory: then every write fails (a limit merely
	// reached refuses only the command that crosses it).
	fill := func() {
		t.Helper()
		for i := range 4 {
			if err := rdb.Set(ctx, fmt.Sprintf("filler:%d", i), strings.Repeat("x", 1<<20), 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.ConfigSet(ctx, "maxmemory", "1mb").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, "probe", "x", time.Minute).Err(); err == nil || !strings.Contains(err.Error(), "OOM") {
			t.Fatalf("a write to the full store: %v, want OOM", err)
		}
	}
	empty := func() {
		t.Helper()
		if err := errors.Join(rdb.FlushAll(ctx).Err(), rdb.ConfigSet(ctx, "maxmemory", "0").Err()); err != nil {
			t.Fatal(err)
		}
	}
	replica := func() *Datasource {
		var points int
		d, err := New(inOrg(1), withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}}), func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
			return &fakeUpstream{answer: generated(&points)}, nil
		})
		if err != nil || d.setupErr != nil {
			t.Fatal(err, d.setupErr)
		}
		t.Cleanup(d.Dispose)
		return d
	}
	now := time.Now()
	panel := func(d *Datasource, expr string) (state string, notices int) {
		t.Helper()
		q := dataQuery("A", `{"expr":"`+expr+`","range":true}`)
		q.TimeRange = backend.TimeRange{From: now.Add(-time.Hour), To: now}
		state, ns := storeState(t, ctx, d, q)
		return state, len(ns)
	}
	full := func(d *Datasource, exprs ...string) {
		t.Helper()
		var notices int
		for _, e := range exprs {
			state, n := panel(d, e)
			notices += n
			if !strings.Contains(state, "unavailable: ") || !strings.Contains(state, "full") || !strings.Contains(state, "maxmemory") {
				t.Errorf("%s: stats %q, want the store full and the fix", e, state)
			}
		}
		if notices != 1 {
			t.Errorf("%d notices over %q, want 1", notices, exprs)
		}
	}
	d := replica()
	fill()
	// metric_1 twice: the second is a local hit, which uses the store not at all.
	full(d, "metric_1", "metric_1", "metric_2")
	empty()
	if state, n := panel(d, "metric_3"); strings.Contains(state, "unavailable") || n != 0 {
		t.Errorf("with room again: stats %q, %d notices", state, n)
	}
	fill()
	full(d, "metric_4", "metric_4")
	// Another replica reads metric_3 from the full store: a read, which does not end its
	// outage either.
	full(replica(), "metric_5", "metric_3", "metric_6")
}

// TestStoreFourReplicasOneDashboard: four replicas load one dashboard at once and refresh
// it two minutes later (its tail then fetched), on one store: together they make at most 1.1× the upstream calls one
// replica alone makes (without a store, four would make 4×).
func TestStoreFourReplicasOneDashboard(t *testing.T) {
	srv := storetest.Start(t)
	var panels []backend.DataQuery // several expressions: the replicas contend for several extents
	for i := range 12 {
		panels = append(panels, dataQuery(fmt.Sprintf("P%d", i), fmt.Sprintf(`{"expr":"metric_%d","range":true}`, i%8)),
			dataQuery(fmt.Sprintf("S%d", i), fmt.Sprintf(`{"expr":"stat_%d","instant":true,"range":false}`, i%4)))
	}
	now := time.Now().UTC()
	load := func(d *Datasource, at time.Time) {
		qs := slices.Clone(panels)
		for i := range qs {
			qs[i].TimeRange = backend.TimeRange{From: at.Add(-6 * time.Hour), To: at}
		}
		resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
		if err != nil {
			t.Error(err)
			return
		}
		for ref, dr := range resp.Responses {
			if dr.Error != nil {
				t.Errorf("panel %s: %v", ref, dr.Error)
			}
		}
	}
	// calls loads the dashboard on n replicas at once, then again two minutes later, and
	// counts their upstream calls.
	calls := func(n int, store map[string]any) int {
		var ups []*fakeUpstream
		var ds []*Datasource
		for range n {
			var points int
			up := &fakeUpstream{answer: generatedAt(&points)}
			s := testSettings("")
			if store != nil {
				s = withStore(t, s, store)
			}
			d, err := New(inOrg(1), s, func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) { return up, nil })
			if err != nil || d.setupErr != nil {
				t.Fatal(err, d.setupErr)
			}
			t.Cleanup(d.Dispose)
			ups, ds = append(ups, up), append(ds, d)
		}
		for _, at := range []time.Time{now, now.Add(2 * time.Minute)} {
			var wg sync.WaitGroup
			for _, d := range ds {
				wg.Add(1)
				go func() { defer wg.Done(); load(d, at) }()
			}
			wg.Wait()
		}
		var total int
		for _, up := range ups {
			total += len(up.Calls())
		}
		return total
	}
	alone := calls(1, nil)
	without := calls(4, nil)
	with := calls(4, map[string]any{"addresses": []string{srv.Addr}})
	t.Logf("%d panels, cold load and a refresh two minutes later: one replica %d upstream calls; four without a store %d (%.2f×), with one %d (%.2f×)",
		len(panels), alone, without, float64(without)/float64(alone), with, float64(with)/float64(alone))
	if float64(with) > 1.1*float64(alone) {
		t.Errorf("four replicas on one store made %d upstream calls, more than 1.1× one replica's %d", with, alone)
	}
}

// generatedAt is generated with instant answers stamped at their evaluation time to the
// millisecond, as CloudWatch stamps them (generated's whole seconds come before it, which
// the results cache keeps local).
func generatedAt(points *int) func(c call) (*fakeResponse, error) {
	answer := generated(points)
	return func(c call) (*fakeResponse, error) {
		if c.op != "query" {
			return answer(c)
		}
		return okJSON(fmt.Sprintf(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"expr":%q},"value":[%.3f,"1"]}]}}`,
			c.expr, float64(c.t.UnixMilli())/1000)), nil
	}
}

// storeState runs query A on d and returns its first frame's shared-store stats (their
// names, each followed by ';') and its notices; a query not answered fails the test.
func storeState(t *testing.T, ctx context.Context, d *Datasource, q backend.DataQuery) (state string, notices []data.Notice) {
	t.Helper()
	resp, err := d.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.Responses["A"]
	if dr.Error != nil || len(dr.Frames) == 0 {
		t.Fatalf("%s not answered: %v", q.JSON, dr.Error)
	}
	for _, s := range dr.Frames[0].Meta.Stats {
		if strings.HasPrefix(s.DisplayName, storeStatPrefix) {
			state += s.DisplayName + ";"
		}
	}
	return state, dr.Frames[0].Meta.Notices
}
