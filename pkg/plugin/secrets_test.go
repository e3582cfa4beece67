package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// captureLog records every log line and its fields, at every level.
type captureLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *captureLog) add(level, msg string, args []any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, level+" "+msg+" "+fmt.Sprint(args...))
}
func (c *captureLog) Debug(msg string, args ...any)          { c.add("debug", msg, args) }
func (c *captureLog) Info(msg string, args ...any)           { c.add("info", msg, args) }
func (c *captureLog) Warn(msg string, args ...any)           { c.add("warn", msg, args) }
func (c *captureLog) Error(msg string, args ...any)          { c.add("error", msg, args) }
func (c *captureLog) With(...any) log.Logger                 { return c }
func (c *captureLog) Level() log.Level                       { return log.Debug }
func (c *captureLog) FromContext(context.Context) log.Logger { return c }
func (c *captureLog) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// echoUpstream is a hostile CloudWatch: every answer echoes the request's headers back,
// as raw header lines, as JSON and URL-encoded, in error bodies, in warnings and infos,
// in label values and in resource data. Every other query fails, so diagnosis reports
// rule failures next to findings. It records the signatures it was sent.
type echoUpstream struct {
	n          atomic.Int64
	mu         sync.Mutex
	signatures []string
	auth       []string // Authorization headers, to prove which credentials signed
	fail       bool     // every request fails with 403
}

func (e *echoUpstream) echo(r *http.Request) string {
	var raw strings.Builder
	_ = r.Header.Write(&raw)
	js, _ := json.Marshal(r.Header)
	form := url.Values{}
	for k := range r.Header {
		form.Set(k, r.Header.Get(k))
	}
	// Also path-escaped, and JSON with "+" as \u002b, as other encoders write them.
	return raw.String() + " " + string(js) + " " + form.Encode() + " " + url.PathEscape(raw.String()) + " " + strings.ReplaceAll(string(js), "+", `\u002b`)
}

func (e *echoUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a := r.Header.Get("Authorization"); a != "" {
		if i := strings.Index(a, "Signature="); i >= 0 {
			e.mu.Lock()
			e.signatures = append(e.signatures, a[i+len("Signature="):])
			e.auth = append(e.auth, a)
			e.mu.Unlock()
		}
	}
	echo := e.echo(r)
	quoted, _ := json.Marshal(echo)
	if e.fail || e.n.Add(1)%2 == 0 {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"__type":"AccessDeniedException","message":%s}`, quoted)
		return
	}
	switch r.URL.Path {
	case "/api/v1/query", "/api/v1/query_range":
		sample := fmt.Sprintf(`[%d,"1"]`, time.Now().Unix())
		result := fmt.Sprintf(`"resultType":"vector","result":[{"metric":{"aws.sagemaker.endpoint.name":"ep","echo":%s},"value":%s}]`, quoted, sample)
		if r.URL.Path == "/api/v1/query_range" {
			result = fmt.Sprintf(`"resultType":"matrix","result":[{"metric":{"aws.sagemaker.endpoint.name":"ep","echo":%s},"values":[%s]}]`, quoted, sample)
		}
		fmt.Fprintf(w, `{"status":"success","data":{%s},"warnings":[%s],"infos":[%s]}`, result, quoted, quoted)
	default:
		fmt.Fprintf(w, `{"status":"success","data":[%s],"warnings":[%s]}`, quoted, quoted)
	}
}

// fakeSTS answers AssumeRole with temporary credentials.
func fakeSTS(t *testing.T, keyID, secret, token string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>
<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/grafana/s</Arn><AssumedRoleId>AROAEXAMPLEID:s</AssumedRoleId></AssumedRoleUser>
</AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleResponse>`,
			keyID, secret, token, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNoSecretLeavesThePlugin sends queries, diagnosis, resource calls and Save & test
// through a hostile upstream for every auth type, then searches every output and the log
// for the credentials the signer used and the signatures it sent, in every encoding.
func TestNoSecretLeavesThePlugin(t *testing.T) {
	type secretSet struct{ keyID, secret, token string }
	keys := secretSet{"AKIAKEYSAUTH00000001", "keys/Secret+Access+Key/0000000000000001", "IQoJb3JpZ2luX2VjEKeys+Token/With=Chars0001"}
	env := secretSet{"ASIAENVCHAIN00000002", "env/Secret+Access+Key/00000000000000002", "IQoJb3JpZ2luX2VjEEnv+Token/With=Chars00002"}
	role := secretSet{"ASIAASSUMEDROLE00003", "role/Secret+Access+Key/0000000000000003", "IQoJb3JpZ2luX2VjERole+Token/With=Chars0003"}
	profile := secretSet{"ASIAPROFILEFILE00004", "file/Secret+Access+Key/0000000000000004", "IQoJb3JpZ2luX2VjEFile+Token/With=Chars0004"}

	for _, tc := range []struct {
		name     string
		jsonData map[string]string
		secure   map[string]string
		env      *secretSet
		sts      *secretSet
		profile  *secretSet  // written to a shared credentials file as profile "grafana"
		used     []secretSet // credentials that must never show; the last one signs
	}{
		{name: "keys with session token", jsonData: map[string]string{"authType": "keys"},
			secure: map[string]string{"accessKey": keys.keyID, "secretKey": keys.secret, "sessionToken": keys.token}, used: []secretSet{keys}},
		{name: "default chain from the environment", jsonData: map[string]string{"authType": "default"}, env: &env, used: []secretSet{env}},
		{name: "profile from a shared credentials file", jsonData: map[string]string{"authType": "credentials", "profile": "grafana"},
			profile: &profile, used: []secretSet{profile}},
		{name: "assumed role via STS", jsonData: map[string]string{"authType": "default", "assumeRoleArn": "arn:aws:iam::123456789012:role/grafana"},
			env: &env, sts: &role, used: []secretSet{env, role}},
	} {
		for _, fail := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fail=%v", tc.name, fail), func(t *testing.T) {
				t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
				credFile := t.TempDir() + "/credentials"
				t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credFile)
				if tc.profile != nil {
					content := fmt.Sprintf("[grafana]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n", tc.profile.keyID, tc.profile.secret, tc.profile.token)
					if err := os.WriteFile(credFile, []byte(content), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
				t.Setenv("AWS_ACCESS_KEY_ID", "")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "")
				t.Setenv("AWS_SESSION_TOKEN", "")
				if tc.env != nil {
					t.Setenv("AWS_ACCESS_KEY_ID", tc.env.keyID)
					t.Setenv("AWS_SECRET_ACCESS_KEY", tc.env.secret)
					t.Setenv("AWS_SESSION_TOKEN", tc.env.token)
				}
				if tc.sts != nil {
					t.Setenv("AWS_ENDPOINT_URL_STS", fakeSTS(t, tc.sts.keyID, tc.sts.secret, tc.sts.token))
				}
				logs := &captureLog{}
				prev := backend.Logger
				backend.Logger = logs
				t.Cleanup(func() { backend.Logger = prev })

				up := &echoUpstream{fail: fail}
				srv := httptest.NewServer(up)
				t.Cleanup(srv.Close)
				jd := map[string]string{"defaultRegion": "us-east-1", "endpoint": srv.URL}
				for k, v := range tc.jsonData {
					jd[k] = v
				}
				raw, _ := json.Marshal(jd)
				d := newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{UID: "echo", JSONData: raw, DecryptedSecureJSONData: tc.secure})
				if d.setupErr != nil {
					t.Fatalf("settings: %v", d.setupErr)
				}

				var outputs []string
				ctx := context.Background()
				now := time.Now()
				tr := backend.TimeRange{From: now.Add(-time.Hour), To: now}
				queries := []backend.DataQuery{
					{RefID: "A", JSON: json.RawMessage(`{"expr":"up","range":true,"instant":true,"legendFormat":"{{echo}}"}`), TimeRange: tr, Interval: time.Minute, MaxDataPoints: 100},
					{RefID: "B", JSON: json.RawMessage(`{"expr":"sum(up)","legendFormat":"__auto"}`), TimeRange: tr, Interval: time.Minute, MaxDataPoints: 100},
					{RefID: "D", QueryType: "diagnosis", JSON: json.RawMessage(`{"endpoint":"ep"}`), TimeRange: tr},
				}
				resp, err := d.QueryData(ctx, &backend.QueryDataRequest{Queries: queries})
				if err != nil {
					t.Fatal(err)
				}
				js, _ := json.Marshal(resp)
				outputs = append(outputs, string(js))
				for _, dr := range resp.Responses {
					if dr.Error != nil {
						outputs = append(outputs, dr.Error.Error())
					}
				}
				for _, rc := range []resourceCall{
					{method: "GET", path: "api/v1/labels"},
					{method: "GET", path: "api/v1/label/job/values"},
					{method: "POST", path: "api/v1/series", body: "match%5B%5D=up"},
					{method: "GET", path: "api/v1/query", query: "query=up"},
				} {
					r := callResource(t, d, rc)
					outputs = append(outputs, string(r.Body))
				}
				h, _ := d.CheckHealth(ctx, &backend.CheckHealthRequest{})
				outputs = append(outputs, h.Message)
				outputs = append(outputs, logs.text())

				all := strings.Join(outputs, "\n")
				up.mu.Lock()
				sigs := append([]string(nil), up.signatures...)
				up.mu.Unlock()
				if len(sigs) == 0 {
					t.Fatal("the upstream saw no signed request")
				}
				if signer := tc.used[len(tc.used)-1].keyID; !strings.Contains(up.auth[0], "Credential="+signer+"/") {
					t.Fatalf("requests were not signed with %s: %s", signer, up.auth[0])
				}
				if !strings.Contains(all, "[redacted]") {
					t.Fatal("nothing was redacted: the echo did not reach the outputs, so this test proves nothing")
				}
				var secrets []string
				for _, s := range tc.used {
					secrets = append(secrets, s.keyID, s.secret, s.token)
				}
				secrets = append(secrets, sigs...)
				for _, s := range secrets {
					for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s), strings.ReplaceAll(s, "/", `\/`), strings.ReplaceAll(s, "+", `\u002b`), s[:16]} {
						if strings.Contains(all, form) {
							i := strings.Index(all, form)
							t.Errorf("secret form %q leaks: …%s…", form, all[max(0, i-80):min(len(all), i+len(form)+20)])
						}
					}
				}
			})
		}
	}
}

// TestLogKeepsSecureJSONDataThroughOtherInstancesChurn: a day of hourly assumed-role
// rotations reported by other instances' signers does not make the log forget an
// instance's secureJsonData; disposing the instance drops it.
func TestLogKeepsSecureJSONDataThroughOtherInstancesChurn(t *testing.T) {
	const secret = "pinned/Secret+Key/TestLogKeeps000000001"
	d, err := New(context.Background(), backend.DataSourceInstanceSettings{UID: "pinned", JSONData: json.RawMessage(`{"authType":"keys","defaultRegion":"us-east-1"}`),
		DecryptedSecureJSONData: map[string]string{"accessKey": "AKIDPINNEDKEY0000001", "secretKey": secret}}, NewClient)
	if err != nil {
		t.Fatal(err)
	}
	other := sinks{logSecrets} // what another instance's signer reports
	for hour := range 30 {
		other.Add(fmt.Sprintf("ASIAOTHER%011d", hour), fmt.Sprintf("other-secret-%d", hour), fmt.Sprintf("other-token-%d", hour))
	}
	logs := &captureLog{}
	prev := backend.Logger
	backend.Logger = logs
	t.Cleanup(func() { backend.Logger = prev })
	logError("upstream said", "body", "key "+secret)
	if strings.Contains(logs.text(), secret) {
		t.Fatalf("secureJsonData leaks into the log after other instances' churn: %s", logs.text())
	}
	d.Dispose()
	if got := logSecrets.String(secret); got != secret {
		t.Errorf("a disposed instance's secret is still pinned in the log redactor: %q", got)
	}
}

// TestStorePasswordNeverLeaves runs queries, resource calls and Save & test against a real
// store reached with its password, with a wrong one and stopped mid-use, and searches every
// output and the log for the password: the store's errors, stats and notices must show
// (else the test proves nothing) and the password never.
func TestStorePasswordNeverLeaves(t *testing.T) {
	srv := storetest.Start(t, "--requirepass", storePassword)
	for _, tc := range []struct {
		name, password string
		stop           bool
		want           string // a store message that must reach the outputs
	}{
		{name: "right password", password: storePassword, want: "shared store reachable"},
		{name: "wrong password", password: storePassword + "-old", want: "WRONGPASS"},
		{name: "store stopped mid-use", password: storePassword, stop: true, want: "shared cache unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &captureLog{}
			prev := backend.Logger
			backend.Logger = logs
			t.Cleanup(func() { backend.Logger = prev })
			var points int
			s := withStore(t, testSettings(""), map[string]any{"addresses": []string{srv.Addr}})
			s.DecryptedSecureJSONData["sharedStorePassword"] = tc.password
			d, err := New(inOrg(1), s, func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
				return &fakeUpstream{answer: generated(&points)}, nil
			})
			if err != nil || d.setupErr != nil {
				t.Fatal(err, d.setupErr)
			}
			t.Cleanup(d.Dispose)
			var outputs []string
			now := time.Now()
			query := func() {
				resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A",
					JSON: json.RawMessage(`{"expr":"up","range":true}`), TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}, Interval: time.Minute, MaxDataPoints: 100}}})
				if err != nil {
					t.Fatal(err)
				}
				js, _ := json.Marshal(resp)
				outputs = append(outputs, string(js))
			}
			query()
			outputs = append(outputs, string(callResource(t, d, resourceCall{method: "GET", path: "api/v1/labels"}).Body))
			if tc.stop {
				srv.Stop()
				t.Cleanup(srv.Restart)
				query()
			}
			h, _ := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			outputs = append(outputs, h.Message, logs.text())
			all := strings.Join(outputs, "\n")
			if !strings.Contains(all, tc.want) || !strings.Contains(all, storeStatPrefix) {
				t.Fatalf("the outputs lack %q or the store's stats: this test proves nothing\n%s", tc.want, all)
			}
			for _, form := range []string{storePassword, url.QueryEscape(storePassword), fmt.Sprintf("%x", storePassword)} {
				if strings.Contains(all, form) {
					t.Errorf("the store's password leaks as %q", form)
				}
			}
		})
	}
}
