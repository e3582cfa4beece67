package awsauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
)

const (
	secretKey    = "secret-never-printed"
	sessionToken = "token-never-printed"
)

func withGrafanaCfg(m map[string]string) context.Context {
	return backend.WithGrafanaConfig(context.Background(), backend.NewGrafanaCfg(m))
}

func TestSettingsNeverPrintSecrets(t *testing.T) {
	s := Settings{AuthType: AuthKeys, Region: "us-east-1", AccessKey: "AKIDVISIBLE", SecretKey: secretKey, SessionToken: sessionToken}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"json": string(js)}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		outputs[f] = fmt.Sprintf(f, s)
	}
	outputs["pointer %v"] = fmt.Sprintf("%v", &s)
	for name, out := range outputs {
		if strings.Contains(out, secretKey) || strings.Contains(out, sessionToken) || strings.Contains(out, "AKIDVISIBLE") {
			t.Errorf("%s printed a secret: %s", name, out)
		}
		if !strings.Contains(out, "us-east-1") {
			t.Errorf("%s lost the non-secret fields: %s", name, out)
		}
	}
	if !strings.Contains(string(js), `"secretKeySet":true`) {
		t.Errorf("JSON should say the secret is set: %s", js)
	}
}

func TestGate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     map[string]string
		s       Settings
		wantErr wantErr
	}{
		{name: "defaults allow keys", s: Settings{AuthType: AuthKeys}},
		{name: "defaults allow empty = default", s: Settings{}},
		{name: "defaults refuse ec2_iam_role", s: Settings{AuthType: AuthEC2IAMRole}, wantErr: settingErr("allowed_auth_providers", SetAuthType)},
		{name: "configured list allows ec2", cfg: map[string]string{KeyAllowedAuthProviders: "ec2_iam_role, keys"}, s: Settings{AuthType: AuthEC2IAMRole}},
		{name: "configured list refuses default", cfg: map[string]string{KeyAllowedAuthProviders: "keys"}, s: Settings{}, wantErr: settingErr(`"default" is not allowed on this Grafana server (allowed: keys)`, SetAuthType)},
		{name: "unknown type", s: Settings{AuthType: "grafana_assume_role"}, wantErr: settingErr("is not supported: use one of default, keys, credentials, ec2_iam_role", SetAuthType)},
		{name: "assume role enabled by default", s: Settings{AssumeRoleARN: "arn:aws:iam::123456789012:role/r"}},
		{name: "assume role disabled", cfg: map[string]string{KeyAssumeRoleEnabled: "false"}, s: Settings{AssumeRoleARN: "arn:aws:iam::123456789012:role/r"}, wantErr: settingErr("assume_role_enabled = false", SetAssumeRoleARN)},
		{name: "assume role disabled, not used", cfg: map[string]string{KeyAssumeRoleEnabled: "false"}, s: Settings{AuthType: AuthKeys}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := GateFromContext(withGrafanaCfg(tc.cfg)).Check(tc.s)
			checkErr(t, err, tc.wantErr)
		})
	}
}

// wantErr is the error a case expects (none when zero): a *SettingError naming settings, a
// *RegionNameError for badRegion, or an error wrapping cause; text is a fragment of its
// message telling its kind apart (what is wrong, or the fix).
type wantErr struct {
	settings  []Setting
	badRegion string
	cause     error
	text      string
}

func settingErr(text string, settings ...Setting) wantErr {
	return wantErr{settings: settings, text: text}
}

func checkErr(t *testing.T, err error, want wantErr) {
	t.Helper()
	if want.settings == nil && want.badRegion == "" && want.cause == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var (
		se *SettingError
		re *RegionNameError
	)
	switch {
	case err == nil:
		t.Fatalf("no error, want %+v", want)
	case want.settings != nil && (!errors.As(err, &se) || !slices.Equal(se.Settings, want.settings)):
		t.Errorf("error %v (%#v), want a *SettingError naming %v", err, err, want.settings)
	case want.badRegion != "" && (!errors.As(err, &re) || re.Value != want.badRegion):
		t.Errorf("error %v, want a *RegionNameError for %q", err, want.badRegion)
	case want.cause != nil && !errors.Is(err, want.cause):
		t.Errorf("error %v does not wrap %v", err, want.cause)
	}
	if !strings.Contains(err.Error(), want.text) {
		t.Errorf("error %q does not contain %q", err, want.text)
	}
	if !backend.IsDownstreamError(err) {
		t.Errorf("error %q should be a downstream error", err)
	}
}

type staticEC2 struct{ calls int }

func (p *staticEC2) Retrieve(context.Context) (aws.Credentials, error) {
	p.calls++
	return aws.Credentials{AccessKeyID: "AKIDEC2", SecretAccessKey: secretKey, CanExpire: true, Expires: time.Now().Add(time.Hour)}, nil
}

func TestNewCredentialsProvider(t *testing.T) {
	dir := t.TempDir()
	credsFile := filepath.Join(dir, "credentials")
	if err := os.WriteFile(credsFile, []byte("[default]\naws_access_key_id = AKIDDEFAULTPROFILE\naws_secret_access_key = s1\n\n[team]\naws_access_key_id = AKIDTEAM\naws_secret_access_key = s2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The real config loader reads only these files, so nothing leaves the machine.
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credsFile)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	ec2 := &staticEC2{}
	errBrokenEnv := errors.New("broken env")
	fakeDefault := func(ctx context.Context, _ ...func(*config.LoadOptions) error) (aws.Config, error) {
		return aws.Config{Credentials: credentials.NewStaticCredentialsProvider("AKIDCHAIN", secretKey, "")}, nil
	}
	tests := []struct {
		name    string
		cfg     map[string]string
		s       Settings
		deps    Deps
		wantKey string
		wantTok string
		wantErr wantErr
	}{
		{name: "keys", s: Settings{AuthType: AuthKeys, AccessKey: "AKIDKEYS", SecretKey: secretKey, SessionToken: sessionToken}, wantKey: "AKIDKEYS", wantTok: sessionToken},
		{name: "keys without secret", s: Settings{AuthType: AuthKeys, AccessKey: "AKIDKEYS"}, wantErr: settingErr("enter the secret access key", SetSecretKey)},
		{name: "default chain (injected loader)", s: Settings{Region: "us-east-1"}, deps: Deps{LoadConfig: fakeDefault}, wantKey: "AKIDCHAIN"},
		{name: "default chain loader fails", s: Settings{}, deps: Deps{LoadConfig: func(context.Context, ...func(*config.LoadOptions) error) (aws.Config, error) {
			return aws.Config{}, errBrokenEnv
		}}, wantErr: wantErr{cause: errBrokenEnv, text: `loading AWS configuration for authentication type "default"`}},
		{name: "credentials: named profile from the shared file", s: Settings{AuthType: AuthCredentials, Profile: "team", Region: "us-east-1"}, wantKey: "AKIDTEAM"},
		{name: "credentials: empty profile means default", s: Settings{AuthType: AuthCredentials, Region: "us-east-1"}, wantKey: "AKIDDEFAULTPROFILE"},
		{name: "credentials: missing profile", s: Settings{AuthType: AuthCredentials, Profile: "nope"}, wantErr: settingErr(`profile "nope" was not found`, SetProfile)},
		{name: "ec2 role", cfg: map[string]string{KeyAllowedAuthProviders: "ec2_iam_role"}, s: Settings{AuthType: AuthEC2IAMRole}, deps: Deps{EC2RoleProvider: ec2}, wantKey: "AKIDEC2"},
		{name: "ec2 role not allowed", s: Settings{AuthType: AuthEC2IAMRole}, deps: Deps{EC2RoleProvider: ec2}, wantErr: settingErr("is not allowed on this Grafana server", SetAuthType)},
		{name: "bad role arn", s: Settings{AuthType: AuthKeys, AccessKey: "a", SecretKey: "b", Region: "us-east-1", AssumeRoleARN: "role/x"}, wantErr: settingErr("is not an IAM role ARN", SetAssumeRoleARN)},
		{name: "assume role without region", s: Settings{AuthType: AuthKeys, AccessKey: "a", SecretKey: "b", AssumeRoleARN: "arn:aws:iam::123456789012:role/r"}, wantErr: settingErr("assume role needs a region", SetRegion)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewCredentialsProvider(withGrafanaCfg(tc.cfg), tc.s, tc.deps)
			checkErr(t, err, tc.wantErr)
			if err != nil {
				return
			}
			if _, ok := p.(*aws.CredentialsCache); !ok {
				t.Errorf("provider %T is not cached", p)
			}
			c, err := p.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if c.AccessKeyID != tc.wantKey || c.SessionToken != tc.wantTok {
				t.Errorf("got key %q token set %v, want %q token %v", c.AccessKeyID, c.SessionToken != "", tc.wantKey, tc.wantTok != "")
			}
		})
	}
	// The cache must answer repeated retrievals without asking the role again.
	p, err := NewCredentialsProvider(withGrafanaCfg(map[string]string{KeyAllowedAuthProviders: "ec2_iam_role"}), Settings{AuthType: AuthEC2IAMRole}, Deps{EC2RoleProvider: ec2})
	if err != nil {
		t.Fatal(err)
	}
	before := ec2.calls
	for range 3 {
		if _, err := p.Retrieve(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if ec2.calls-before != 1 {
		t.Errorf("role asked %d times for 3 retrievals, want 1 (cached)", ec2.calls-before)
	}
}

// fakeSTS answers AssumeRole after verifying the caller's SigV4 signature
// with the independent verifier (service sts).
type fakeSTS struct {
	t        *testing.T
	calls    int
	lastForm map[string]string
}

func (f *fakeSTS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := &sigv4verify.Verifier{Region: "eu-west-1", Service: "sts", Credentials: map[string]sigv4verify.Credential{
		"AKIDBASE": {AccessKeyID: "AKIDBASE", SecretAccessKey: secretKey},
	}}
	if err := v.Verify(r); err != nil {
		sigv4verify.WriteAuthError(w, err)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.calls++
	f.lastForm = map[string]string{}
	for kv := range strings.SplitSeq(string(body), "&") {
		k, v, _ := strings.Cut(kv, "=")
		f.lastForm[k] = v
	}
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>`+
		`<Credentials><AccessKeyId>ASIAASSUMED</AccessKeyId><SecretAccessKey>assumed-secret</SecretAccessKey>`+
		`<SessionToken>assumed-token</SessionToken><Expiration>%s</Expiration></Credentials>`+
		`<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/reader/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>`+
		`</AssumeRoleResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleResponse>`, exp)
}

func TestAssumeRoleAgainstFakeSTS(t *testing.T) {
	tests := []struct {
		name       string
		externalID string
		baseSecret string
		wantErr    bool
	}{
		{name: "with external id", externalID: "ext-42", baseSecret: secretKey},
		{name: "without external id", baseSecret: secretKey},
		{name: "base credentials rejected by STS", baseSecret: "wrong", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeSTS{t: t}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			deps := Deps{NewSTSClient: func(cfg aws.Config) stscreds.AssumeRoleAPIClient {
				return sts.NewFromConfig(cfg, func(o *sts.Options) {
					o.BaseEndpoint = aws.String(srv.URL)
					o.RetryMaxAttempts = 1
				})
			}}
			s := Settings{AuthType: AuthKeys, AccessKey: "AKIDBASE", SecretKey: Secret(tc.baseSecret), Region: "eu-west-1",
				AssumeRoleARN: "arn:aws:iam::123456789012:role/reader", ExternalID: tc.externalID}
			p, err := NewCredentialsProvider(context.Background(), s, deps)
			if err != nil {
				t.Fatal(err)
			}
			c, err := p.Retrieve(context.Background())
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error from STS")
				}
				if strings.Contains(err.Error(), tc.baseSecret) {
					t.Error("secret leaked into the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.AccessKeyID != "ASIAASSUMED" || c.SessionToken != "assumed-token" {
				t.Errorf("got %q, want the assumed role's credentials", c.AccessKeyID)
			}
			if fake.lastForm["Action"] != "AssumeRole" || fake.lastForm["RoleArn"] != "arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Freader" {
				t.Errorf("STS form %v", fake.lastForm)
			}
			if fake.lastForm["ExternalId"] != tc.externalID {
				t.Errorf("ExternalId %q, want %q", fake.lastForm["ExternalId"], tc.externalID)
			}
			if fake.lastForm["RoleSessionName"] != RoleSessionName {
				t.Errorf("RoleSessionName %q", fake.lastForm["RoleSessionName"])
			}
			if _, err := p.Retrieve(context.Background()); err != nil || fake.calls != 1 {
				t.Errorf("second retrieval: err %v, STS calls %d, want 1 (cached)", err, fake.calls)
			}
		})
	}
}

func TestResolveEndpoint(t *testing.T) {
	tests := []struct {
		name       string
		s          Settings
		wantURL    string
		wantRegion string
		wantErr    wantErr
	}{
		{name: "region only", s: Settings{Region: "us-east-1"}, wantURL: "https://monitoring.us-east-1.amazonaws.com", wantRegion: "us-east-1"},
		{name: "datasource URL, region derived", s: Settings{DatasourceURL: "https://monitoring.eu-west-1.amazonaws.com/"}, wantURL: "https://monitoring.eu-west-1.amazonaws.com", wantRegion: "eu-west-1"},
		{name: "china partition", s: Settings{DatasourceURL: "https://monitoring.cn-north-1.amazonaws.com.cn", Region: "cn-north-1"}, wantURL: "https://monitoring.cn-north-1.amazonaws.com.cn", wantRegion: "cn-north-1"},
		{name: "china suffix with commercial region", s: Settings{DatasourceURL: "https://monitoring.us-east-1.amazonaws.com.cn"}, wantErr: settingErr("valid region for its partition", SetURL, SetRegion)},
		{name: "endpoint beats URL", s: Settings{Endpoint: "http://127.0.0.1:9090", DatasourceURL: "https://monitoring.us-east-1.amazonaws.com", Region: "us-east-1"}, wantURL: "http://127.0.0.1:9090", wantRegion: "us-east-1"},
		{name: "custom https endpoint", s: Settings{Endpoint: "https://cw-proxy.internal.example/cw/", Region: "us-east-1"}, wantURL: "https://cw-proxy.internal.example/cw", wantRegion: "us-east-1"},
		{name: "custom endpoint needs region", s: Settings{Endpoint: "https://cw-proxy.internal.example"}, wantErr: settingErr("the signing region cannot be derived", SetEndpoint, SetRegion)},
		{name: "loopback URL allowed", s: Settings{DatasourceURL: "http://localhost:9090", Region: "us-east-1"}, wantURL: "http://localhost:9090", wantRegion: "us-east-1"},
		{name: "ipv6 loopback", s: Settings{Endpoint: "http://[::1]:9090", Region: "us-east-1"}, wantURL: "http://[::1]:9090", wantRegion: "us-east-1"},
		{name: "127/8 loopback", s: Settings{Endpoint: "http://127.1.2.3:80", Region: "us-east-1"}, wantURL: "http://127.1.2.3:80", wantRegion: "us-east-1"},
		{name: "region mismatch", s: Settings{DatasourceURL: "https://monitoring.us-west-2.amazonaws.com", Region: "us-east-1"}, wantErr: settingErr(`is in region "us-west-2" but jsonData.defaultRegion is "us-east-1"`, SetURL, SetRegion)},
		{name: "plain http to AWS", s: Settings{DatasourceURL: "http://monitoring.us-east-1.amazonaws.com"}, wantErr: settingErr("plain http to a non-loopback host", SetURL, SetRegion)},
		{name: "plain http to custom endpoint", s: Settings{Endpoint: "http://10.0.0.5:9090", Region: "us-east-1"}, wantErr: settingErr("plain http to a non-loopback host", SetEndpoint, SetRegion)},
		{name: "foreign datasource URL", s: Settings{DatasourceURL: "https://evil.example.com", Region: "us-east-1"}, wantErr: settingErr("is not a CloudWatch endpoint", SetURL, SetEndpoint)},
		{name: "lookalike host", s: Settings{DatasourceURL: "https://monitoring.us-east-1.amazonaws.com.evil.example", Region: "us-east-1"}, wantErr: settingErr("is not a CloudWatch endpoint", SetURL, SetEndpoint)},
		{name: "AMP host is not CloudWatch", s: Settings{DatasourceURL: "https://aps-workspaces.us-east-1.amazonaws.com", Region: "us-east-1"}, wantErr: settingErr("is not a CloudWatch endpoint", SetURL, SetEndpoint)},
		{name: "user info", s: Settings{Endpoint: "https://u:p@monitoring.us-east-1.amazonaws.com"}, wantErr: settingErr("must not carry user credentials", SetEndpoint, SetRegion)},
		{name: "ftp scheme", s: Settings{Endpoint: "ftp://127.0.0.1", Region: "us-east-1"}, wantErr: settingErr("must use https", SetEndpoint, SetRegion)},
		{name: "not a URL", s: Settings{Endpoint: "monitoring.us-east-1.amazonaws.com"}, wantErr: settingErr("is not an absolute URL", SetEndpoint, SetRegion)},
		{name: "path on AWS host", s: Settings{DatasourceURL: "https://monitoring.us-east-1.amazonaws.com/workspaces/x"}, wantErr: settingErr("must not have a path", SetURL, SetRegion)},
		{name: "query on URL", s: Settings{DatasourceURL: "https://monitoring.us-east-1.amazonaws.com/?a=b"}, wantErr: settingErr("must not have a query or fragment", SetURL, SetRegion)},
		{name: "nothing configured", s: Settings{}, wantErr: settingErr("no region configured", SetRegion)},
		{name: "region injection", s: Settings{Region: "evil.com/x"}, wantErr: settingErr("is not an AWS region name", SetRegion)},
		{name: "china region only", s: Settings{Region: "cn-northwest-1"}, wantURL: "https://monitoring.cn-northwest-1.amazonaws.com.cn", wantRegion: "cn-northwest-1"},
		{name: "gov region", s: Settings{Region: "us-gov-west-1"}, wantURL: "https://monitoring.us-gov-west-1.amazonaws.com", wantRegion: "us-gov-west-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := ResolveEndpoint(tc.s)
			checkErr(t, err, tc.wantErr)
			if err != nil {
				return
			}
			if ep.URL.String() != tc.wantURL || ep.Region != tc.wantRegion {
				t.Errorf("got %s in %s, want %s in %s", ep.URL, ep.Region, tc.wantURL, tc.wantRegion)
			}
		})
	}
}

func TestRestrictToEndpoint(t *testing.T) {
	sent := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent++ }))
	defer srv.Close()
	ep, err := ResolveEndpoint(Settings{Endpoint: srv.URL, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: RestrictToEndpoint(http.DefaultTransport, ep)}
	for _, tc := range []struct {
		url     string
		wantErr bool
	}{
		{url: srv.URL + "/api/v1/query"},
		{url: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/api/v1/query", wantErr: true},
		{url: strings.Replace(srv.URL, "http:", "https:", 1), wantErr: true},
	} {
		before := sent
		resp, err := client.Get(tc.url)
		if err == nil {
			resp.Body.Close()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want error %v", tc.url, err, tc.wantErr)
		}
		if tc.wantErr && sent != before {
			t.Errorf("%s: a refused request reached the server", tc.url)
		}
	}
}

func TestServiceEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name              string
		s                 Settings
		wantSM, wantScale string
	}{
		{"region only", Settings{Region: "us-east-1"}, "https://api.sagemaker.us-east-1.amazonaws.com", "https://application-autoscaling.us-east-1.amazonaws.com"},
		{"CloudWatch URL", Settings{DatasourceURL: "https://monitoring.eu-west-1.amazonaws.com"}, "https://api.sagemaker.eu-west-1.amazonaws.com", "https://application-autoscaling.eu-west-1.amazonaws.com"},
		{"CloudWatch host as endpoint", Settings{Endpoint: "https://MONITORING.us-west-2.amazonaws.com", Region: "us-west-2"}, "https://api.sagemaker.us-west-2.amazonaws.com", "https://application-autoscaling.us-west-2.amazonaws.com"},
		{"china partition", Settings{Region: "cn-north-1"}, "https://api.sagemaker.cn-north-1.amazonaws.com.cn", "https://application-autoscaling.cn-north-1.amazonaws.com.cn"},
		{"custom endpoint serves all", Settings{Endpoint: "https://proxy.internal.example/aws", Region: "us-east-1"}, "https://proxy.internal.example/aws", "https://proxy.internal.example/aws"},
		{"emulator on loopback", Settings{Endpoint: "http://127.0.0.1:9090", Region: "us-east-1"}, "http://127.0.0.1:9090", "http://127.0.0.1:9090"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := ResolveEndpoint(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				got  Endpoint
				want string
			}{{SageMakerEndpoint(ep), tc.wantSM}, {AutoScalingEndpoint(ep), tc.wantScale}} {
				if c.got.URL.String() != c.want || c.got.Region != ep.Region {
					t.Errorf("got %s in %s, want %s in %s", c.got.URL, c.got.Region, c.want, ep.Region)
				}
			}
		})
	}
}
