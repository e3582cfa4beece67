package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
)

const (
	testAccessKey = "AKIAEXAMPLEACCESSKEY"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY"
	testToken     = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
)

func instance(jsonData string, secure map[string]string) backend.DataSourceInstanceSettings {
	return backend.DataSourceInstanceSettings{
		URL:                     "https://monitoring.eu-west-1.amazonaws.com",
		JSONData:                json.RawMessage(jsonData),
		DecryptedSecureJSONData: secure,
	}
}

var allSecrets = map[string]string{"accessKey": testAccessKey, "secretKey": testSecretKey, "sessionToken": testToken}

func TestLoadSettings(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		secure  map[string]string
		check   func(t *testing.T, s *Settings)
		wantErr []string
	}{
		{
			name: "empty jsonData gets defaults",
			json: ``,
			check: func(t *testing.T, s *Settings) {
				want := Settings{
					Auth:         awsauth.Settings{DatasourceURL: "https://monitoring.eu-west-1.amazonaws.com", AuthType: awsauth.AuthDefault},
					TimeInterval: time.Minute, QueryTimeout: 60 * time.Second, HTTPMethod: "POST", MaxConcurrency: DefaultMaxConcurrency, RequestsPerSecond: DefaultRequestsPerSecond,
					Resources: Resources{CacheSizeMiB: DefaultCacheSizeMiB, CacheRefetchWindow: DefaultCacheRefetchWindow,
						CacheFreshFor: DefaultCacheFreshFor, CostPerMillionSamples: DefaultCostPerMillionSamples},
				}
				if !reflect.DeepEqual(*s, want) {
					t.Fatalf("got %+v\nwant %+v", *s, want)
				}
			},
		},
		{
			name: "cache reuse spelled out",
			json: `{"cacheFreshFor":"step"}`,
			check: func(t *testing.T, s *Settings) {
				if s.CacheFreshFor != CacheFreshOneStep || !strings.Contains(s.Resources.String(), "cacheFreshFor=step") {
					t.Fatalf("cacheFreshFor %v (%s), want the one-step rule", s.CacheFreshFor, s.Resources)
				}
			},
		},
		{
			name: "cache reuse as a duration",
			json: `{"cacheFreshFor":"90s"}`,
			check: func(t *testing.T, s *Settings) {
				if s.CacheFreshFor != 90*time.Second {
					t.Fatalf("cacheFreshFor %v, want 90s", s.CacheFreshFor)
				}
			},
		},
		{
			name: "full keys configuration",
			json: `{"authType":"keys","defaultRegion":"us-east-1","profile":"p","assumeRoleArn":"arn:aws:iam::123456789012:role/r","externalId":"x","endpoint":"https://monitoring.us-east-1.amazonaws.com","timeInterval":"30s","queryTimeout":"2m","httpMethod":"get","maxConcurrency":"5","requestsPerSecond":12.5,` +
				`"cacheSizeMiB":0,"cacheRefetchWindow":"5m","cacheFreshFor":"0s","costPerMillionSamples":0.02}`,
			secure: allSecrets,
			check: func(t *testing.T, s *Settings) {
				want := Settings{
					Auth: awsauth.Settings{
						DatasourceURL: "https://monitoring.eu-west-1.amazonaws.com", AuthType: awsauth.AuthKeys, Region: "us-east-1",
						Profile: "p", AssumeRoleARN: "arn:aws:iam::123456789012:role/r", ExternalID: "x",
						Endpoint:  "https://monitoring.us-east-1.amazonaws.com",
						AccessKey: testAccessKey, SecretKey: testSecretKey, SessionToken: testToken,
					},
					TimeInterval: 30 * time.Second, QueryTimeout: 2 * time.Minute, HTTPMethod: "GET", MaxConcurrency: 5, RequestsPerSecond: 12.5,
					Resources: Resources{CacheRefetchWindow: 5 * time.Minute, CacheFreshFor: CacheFreshNever, CostPerMillionSamples: 0.02},
				}
				if !reflect.DeepEqual(*s, want) {
					t.Fatalf("got %+v\nwant %+v", *s, want)
				}
				if s.Auth.SecretKey.Reveal() != testSecretKey {
					t.Fatal("Reveal must return the secret")
				}
			},
		},
		{
			// Provisioning files written for earlier versions may carry a memoryBudgetMiB key.
			name: "a retired memoryBudgetMiB key is ignored",
			json: `{"memoryBudgetMiB":"much","cacheSizeMiB":64}`,
			check: func(t *testing.T, s *Settings) {
				if s.CacheSizeMiB != 64 || strings.Contains(s.String(), "memoryBudget") {
					t.Fatalf("got %s, want cacheSizeMiB=64 and no memory budget", s)
				}
			},
		},
		{
			name: "each auth type is accepted",
			json: `{"authType":"ec2_iam_role"}`,
			check: func(t *testing.T, s *Settings) {
				if s.Auth.AuthType != awsauth.AuthEC2IAMRole {
					t.Fatalf("authType = %q", s.Auth.AuthType)
				}
			},
		},
		{
			name: "credentials auth with a profile",
			json: `{"authType":"credentials","profile":"ml"}`,
			check: func(t *testing.T, s *Settings) {
				if s.Auth.AuthType != awsauth.AuthCredentials || s.Auth.Profile != "ml" {
					t.Fatalf("got %+v", s)
				}
			},
		},
		{
			name: "null and blank numbers keep defaults",
			json: `{"maxConcurrency":null,"requestsPerSecond":""}`,
			check: func(t *testing.T, s *Settings) {
				if s.MaxConcurrency != DefaultMaxConcurrency || s.RequestsPerSecond != DefaultRequestsPerSecond {
					t.Fatalf("got %+v", s)
				}
			},
		},
		{name: "zero time interval keeps the default min step", json: `{"timeInterval":"0s"}`, check: wantTimeInterval(DefaultTimeInterval)},
		{name: "bare zero time interval keeps the default", json: `{"timeInterval":"0"}`, check: wantTimeInterval(DefaultTimeInterval)},
		{name: "negative time interval is refused", json: `{"timeInterval":"-30s"}`, wantErr: []string{`jsonData.timeInterval: invalid duration "-30s"`}},
		{name: "empty time interval keeps the default", json: `{"timeInterval":""}`, check: wantTimeInterval(DefaultTimeInterval)},
		{name: "sub-minute time interval is kept", json: `{"timeInterval":"15s"}`, check: wantTimeInterval(15 * time.Second)},
		{name: "unknown auth type", json: `{"authType":"grafana_assume_role"}`, wantErr: []string{`jsonData.authType "grafana_assume_role" is not supported`, "default, keys, credentials, ec2_iam_role"}},
		{name: "keys without keys", json: `{"authType":"keys"}`, wantErr: []string{"secureJsonData.accessKey is empty", "secureJsonData.secretKey is empty"}},
		{name: "keys without secret key", json: `{"authType":"keys"}`, secure: map[string]string{"accessKey": testAccessKey}, wantErr: []string{"secureJsonData.secretKey is empty"}},
		{name: "access key with a line break", json: `{"authType":"keys"}`, secure: map[string]string{"accessKey": "AKIDPART\nTWO", "secretKey": testSecretKey},
			wantErr: []string{"secureJsonData.accessKey contains a line break", "paste it again as one line"}},
		{name: "bad http method", json: `{"httpMethod":"PUT"}`, wantErr: []string{`jsonData.httpMethod "PUT" is not supported: use POST`}},
		{name: "bad time interval", json: `{"timeInterval":"fast"}`, wantErr: []string{`jsonData.timeInterval: invalid duration "fast"`}},
		{name: "bad query timeout", json: `{"queryTimeout":"soon"}`, wantErr: []string{`jsonData.queryTimeout: invalid duration "soon"`}},
		{name: "query timeout too long", json: `{"queryTimeout":"1h"}`, wantErr: []string{`jsonData.queryTimeout "1h" is out of range`}},
		{name: "concurrency above CloudWatch's limit", json: `{"maxConcurrency":31}`, wantErr: []string{"jsonData.maxConcurrency 31 is out of range", "1 to 30"}},
		{name: "fractional concurrency", json: `{"maxConcurrency":2.5}`, wantErr: []string{"jsonData.maxConcurrency 2.5 is out of range"}},
		{name: "concurrency not a number", json: `{"maxConcurrency":"lots"}`, wantErr: []string{"jsonData.maxConcurrency is not a number"}},
		{name: "rate zero", json: `{"requestsPerSecond":0}`, wantErr: []string{"jsonData.requestsPerSecond 0 is out of range"}},
		{name: "rate above limit", json: `{"requestsPerSecond":301}`, wantErr: []string{"at most 300"}},
		{name: "negative cache size", json: `{"cacheSizeMiB":-1}`, wantErr: []string{"jsonData.cacheSizeMiB -1 is out of range"}},
		{name: "fractional cache size", json: `{"cacheSizeMiB":1.5}`, wantErr: []string{"jsonData.cacheSizeMiB 1.5 is out of range"}},
		{name: "bad refetch window", json: `{"cacheRefetchWindow":"7h"}`, wantErr: []string{`jsonData.cacheRefetchWindow "7h" is out of range`}},
		{name: "fresh period too long", json: `{"cacheFreshFor":"1h"}`, wantErr: []string{`jsonData.cacheFreshFor "1h" is out of range`}},
		{name: "negative price", json: `{"costPerMillionSamples":-1}`, wantErr: []string{"jsonData.costPerMillionSamples -1 is out of range"}},
		{name: "wrong type", json: `{"authType":5}`, wantErr: []string{`key "authType" must be a string, not a number`}},
		{name: "not JSON", json: `{`, wantErr: []string{"not valid JSON"}},
		{name: "several problems at once", json: `{"httpMethod":"PATCH","timeInterval":"x"}`, wantErr: []string{"jsonData.httpMethod", "jsonData.timeInterval"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadSettings(instance(tc.json, tc.secure))
			if checkWantErr(t, err, tc.wantErr, s) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

// TestSecretsNeverLeak prints and marshals settings in every way code is likely to, and
// checks that no secret value comes out.
func TestSecretsNeverLeak(t *testing.T) {
	s, err := LoadSettings(instance(`{"authType":"keys"}`, allSecrets))
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("settings", "settings", s, "secret", s.Auth.SecretKey)
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("settings", "settings", *s, "token", s.Auth.SessionToken)
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	// Deliberately odd verbs are what a careless log line would use; calling through a
	// variable keeps vet from rejecting them.
	sprintf := fmt.Sprintf
	outputs := map[string]string{
		"String":  s.String(),
		"%v":      fmt.Sprintf("%v", s),
		"%v val":  fmt.Sprintf("%v", *s),
		"%+v val": fmt.Sprintf("%+v", *s),
		"%#v val": fmt.Sprintf("%#v", *s),
		"%s val":  sprintf("%s", *s),
		"%d val":  sprintf("%d", *s),
		"%x val":  sprintf("%x", *s),
		"%q val":  sprintf("%q", *s),
		"%x key":  fmt.Sprintf("%x", s.Auth.SecretKey),
		"error":   fmt.Errorf("wrapped: %v", *s).Error(),
		"json":    string(js),
		"slog":    logBuf.String(),
	}
	for name, out := range outputs {
		for _, secret := range []string{testAccessKey, testSecretKey, testToken} {
			for _, form := range []string{secret, fmt.Sprintf("%x", secret)} {
				if strings.Contains(out, form) {
					t.Errorf("%s leaks a secret: %s", name, out)
				}
			}
		}
	}
	if !strings.Contains(outputs["String"], "SecretKeySet:true") || !strings.Contains(outputs["json"], `"secretKeySet":true`) {
		t.Errorf("redacted output should still say the secret is present: %s / %s", outputs["String"], outputs["json"])
	}
	var empty Settings
	js, _ = json.Marshal(empty)
	if strings.Contains(string(js), `"accessKeySet":true`) {
		t.Errorf("unset secrets should be omitted: %s", js)
	}
}

func TestStringHidesURLPassword(t *testing.T) {
	in := instance(`{"endpoint":"https://u:hunter2@monitoring.us-east-1.amazonaws.com"}`, nil)
	in.URL = "http://admin:hunter2@127.0.0.1:9090"
	s, err := LoadSettings(in)
	if err != nil {
		t.Fatal(err)
	}
	out := s.String()
	if strings.Contains(out, "hunter2") || !strings.Contains(out, "127.0.0.1:9090") || !strings.Contains(out, "monitoring.us-east-1") {
		t.Fatalf("String() = %s", out)
	}
}

func TestLoadSettingsErrorsNeverLeak(t *testing.T) {
	_, err := LoadSettings(instance(`{"authType":"keys","httpMethod":"PUT","maxConcurrency":99}`, allSecrets))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, secret := range []string{testAccessKey, testSecretKey, testToken} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error leaks a secret: %v", err)
		}
	}
}

// checkWantErr is the error half of the table tests: when the case wants an error it
// checks that err contains every wanted fragment and reports true (the case is done);
// otherwise it reports false. got is shown when an expected error is missing.
func checkWantErr(t *testing.T, err error, wantErr []string, got any) bool {
	t.Helper()
	if len(wantErr) == 0 {
		return false
	}
	if err == nil {
		t.Fatalf("want error, got %+v", got)
	}
	for _, w := range wantErr {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	return true
}

func wantTimeInterval(want time.Duration) func(*testing.T, *Settings) {
	return func(t *testing.T, s *Settings) {
		if s.TimeInterval != want {
			t.Fatalf("TimeInterval = %v, want %v", s.TimeInterval, want)
		}
	}
}

func TestLoadSettingsSharedStore(t *testing.T) {
	const password = "store-password-never-shown"
	tests := []struct {
		name    string
		json    string
		secure  map[string]string
		want    sharedstore.Settings
		wantErr []string // of LoadSettings
		off     []string // of SharedStoreErr: the store is off, the data source loads
	}{
		{name: "absent: no store", json: `{}`},
		{
			name:   "read with its password",
			json:   `{"sharedStore":{"addresses":["redis.internal:6379"],"username":"grafana","keyPrefix":"team-a:","timeout":"20ms","accountShare":50}}`,
			secure: map[string]string{"sharedStorePassword": password},
			want: sharedstore.Settings{Addresses: []string{"redis.internal:6379"}, Username: "grafana", Password: password,
				KeyPrefix: "team-a:", Timeout: 20 * time.Millisecond, AccountShare: 50},
		},
		{
			name: "bad address names the setting and the fix",
			json: `{"sharedStore":{"addresses":["redis.internal"]}}`,
			off:  []string{sharedstore.SetAddresses, "host:port", "redis.internal:6379"},
		},
		{
			name:   "bad timeout: the store is off, the data source loads",
			json:   `{"sharedStore":{"addresses":["r:6379"],"timeout":"soon"}}`,
			secure: map[string]string{"sharedStorePassword": password},
			off:    []string{sharedstore.SetTimeout, "50ms"},
		},
		{
			name:    "other settings' problems still fail it",
			json:    `{"httpMethod":"PUT","sharedStore":{"addresses":["r:6379"],"timeout":"soon"}}`,
			wantErr: []string{"jsonData.httpMethod"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSettings(instance(tt.json, tt.secure))
			if err != nil && strings.Contains(err.Error(), password) {
				t.Fatalf("error leaks the store's password: %v", err)
			}
			if checkWantErr(t, err, tt.wantErr, s) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (s.SharedStoreErr != nil) != (tt.off != nil) {
				t.Fatalf("SharedStoreErr = %v, want one naming %v", s.SharedStoreErr, tt.off)
			}
			for _, w := range tt.off {
				if !strings.Contains(s.SharedStoreErr.Error(), w) {
					t.Errorf("SharedStoreErr %q lacks %q", s.SharedStoreErr, w)
				}
			}
			if !reflect.DeepEqual(s.SharedStore, tt.want) {
				t.Fatalf("SharedStore = %+v, want %+v", s.SharedStore, tt.want)
			}
			js, _ := json.Marshal(s)
			for name, out := range map[string]string{"String": s.String(), "%+v": fmt.Sprintf("%+v", *s), "json": string(js)} {
				if strings.Contains(out, password) {
					t.Errorf("%s leaks the store's password: %s", name, out)
				}
			}
		})
	}
}
