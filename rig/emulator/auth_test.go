package emulator

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

const (
	testRegion = "us-east-1"
	keyID      = "AKIDEMULATORTEST"
	secret     = "emulator-test-secret-key-0000000000000000"
	tokenKeyID = "ASIAEMULATORTEMP"
	token      = "session-token-for-tests"
)

func testVerifier() *sigv4verify.Verifier {
	return &sigv4verify.Verifier{
		Service: awsauth.SigningService,
		Credentials: map[string]sigv4verify.Credential{
			keyID:      {AccessKeyID: keyID, SecretAccessKey: secret},
			tokenKeyID: {AccessKeyID: tokenKeyID, SecretAccessKey: secret, SessionToken: token},
		},
		Now: func() time.Time { return t0 },
	}
}

// signer is how a client signs: which key, where and when.
type signer struct {
	key, secret, token, region, service string
	skew                                time.Duration
}

func (s signer) client() *http.Client {
	if s.key == "" {
		return http.DefaultClient
	}
	creds := credentials.NewStaticCredentialsProvider(s.key, s.secret, s.token)
	at := func() time.Time { return t0.Add(s.skew) }
	return &http.Client{Transport: awsauth.NewSigner(nil, creds, s.region, s.service, at)}
}

func TestSignatures(t *testing.T) {
	// Region comes from Config when the verifier has none.
	srv := newTestServer(t, Config{Region: testRegion, Verifier: testVerifier(), Limits: unthrottled()})
	good := signer{key: keyID, secret: secret, region: testRegion, service: "monitoring"}
	with := func(f func(*signer)) signer { s := good; f(&s); return s }
	query := v("query", `{"http.server.active_requests"}`)

	accepted := []struct {
		name, method, path string
		params             url.Values
		signer             signer
		want               []string // strings expected for list answers
	}{
		{"GET query", "GET", "/api/v1/query", query, good, nil},
		{"POST form query", "POST", "/api/v1/query", query, good, nil},
		{"POST series with quotes and braces", "POST", "/api/v1/series", v("match[]", `{"http.server.active_requests","@resource.service.name"=~"s.*"}`, "start", unix(t0), "end", unix(t0)), good, nil},
		{"GET values %40 path", "GET", "/api/v1/label/%40resource.host.id/values", nil, good, []string{"i-0abc"}},
		{"GET values literal @ path", "GET", "/api/v1/label/@resource.host.id/values", nil, good, []string{"i-0abc"}},
		{"GET labels with match in query string", "GET", "/api/v1/labels", v("match[]", `{"@datapoint.@name"="http_requests_total"}`), good, nil},
		{"session token", "GET", "/api/v1/query", query, with(func(s *signer) { s.key, s.token = tokenKeyID, token }), nil},
		{"clock skew under 5 minutes", "GET", "/api/v1/query", query, with(func(s *signer) { s.skew = -4 * time.Minute }), nil},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, tc.signer.client(), srv.URL, tc.method, tc.path, tc.params)
			if r.status != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", r.status, r.raw)
			}
			if tc.want != nil {
				if got := decodeStrings(t, r); !slices.Equal(got, tc.want) {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			}
		})
	}

	rejected := []struct {
		name, method, path string
		signer             signer
		errType, msg       string
	}{
		{"unsigned", "GET", "/api/v1/query?query=1", signer{}, "MissingAuthenticationTokenException", "Missing Authentication Token"},
		{"unsigned unknown path", "GET", "/api/v1/status/buildinfo", signer{}, "MissingAuthenticationTokenException", ""},
		{"wrong service", "POST", "/api/v1/query", with(func(s *signer) { s.service = "aps" }), "InvalidSignatureException", "Credential should be scoped to correct service: 'monitoring'."},
		{"wrong region", "GET", "/api/v1/labels", with(func(s *signer) { s.region = "eu-west-1" }), "InvalidSignatureException", "region"},
		{"wrong secret", "POST", "/api/v1/query", with(func(s *signer) { s.secret = "not-the-secret" }), "SignatureDoesNotMatch", "signature we calculated does not match"},
		{"unknown key", "GET", "/api/v1/query?query=1", with(func(s *signer) { s.key = "AKIDUNKNOWN" }), "UnrecognizedClientException", "security token"},
		{"missing session token", "GET", "/api/v1/query?query=1", with(func(s *signer) { s.key = tokenKeyID }), "UnrecognizedClientException", "security token"},
		{"wrong session token", "GET", "/api/v1/query?query=1", with(func(s *signer) { s.key, s.token = tokenKeyID, "stolen" }), "UnrecognizedClientException", ""},
		{"stale date", "GET", "/api/v1/query?query=1", with(func(s *signer) { s.skew = -6 * time.Minute }), "", ""},
		{"future date", "POST", "/api/v1/labels", with(func(s *signer) { s.skew = 6 * time.Minute }), "", ""},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			var params url.Values
			if tc.method == http.MethodPost {
				params = query
			}
			r := call(t, tc.signer.client(), srv.URL, tc.method, tc.path, params)
			var body struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(r.raw, &body); err != nil {
				t.Fatalf("403 body is not JSON: %s", r.raw)
			}
			if r.status != http.StatusForbidden || body.Type == "" || r.header.Get("x-amzn-ErrorType") != body.Type || r.header.Get("x-amzn-RequestId") == "" {
				t.Fatalf("got %d %s (headers %v), want an AWS-style 403", r.status, r.raw, r.header)
			}
			if tc.errType != "" && body.Type != tc.errType {
				t.Errorf("__type %q, want %q", body.Type, tc.errType)
			}
			if !strings.Contains(body.Message, tc.msg) {
				t.Errorf("message %q does not contain %q", body.Message, tc.msg)
			}
			if strings.Contains(string(r.raw), secret) {
				t.Errorf("response leaks the secret key")
			}
		})
	}
}

// TestSignatureBeforeLimits: a throttled account still learns first that its
// signature is wrong, and unsigned requests do not use up its rate.
func TestSignatureBeforeLimits(t *testing.T) {
	c := &clock{t: t0}
	srv := newTestServer(t, Config{Verifier: func() *sigv4verify.Verifier { v := testVerifier(); v.Region = testRegion; return v }(), Limits: Limits{QueryTPS: 1}, RateClock: c.now})
	good := signer{key: keyID, secret: secret, region: testRegion, service: "monitoring"}
	for i := range 3 {
		if r := call(t, nil, srv.URL, "GET", "/api/v1/query", v("query", "1")); r.status != http.StatusForbidden {
			t.Fatalf("unsigned request %d: %d, want 403", i, r.status)
		}
	}
	if r := call(t, good.client(), srv.URL, "GET", "/api/v1/query", v("query", "1")); r.status != http.StatusOK {
		t.Fatalf("first signed request: %d %s", r.status, r.raw)
	}
	if r := call(t, good.client(), srv.URL, "GET", "/api/v1/query", v("query", "1")); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("second signed request in the same second: %d, want 422", r.status)
	}
}

func TestVerifierNeedsRegion(t *testing.T) {
	_, err := New(Config{Verifier: testVerifier()}, openDB(t))
	if err == nil || !strings.Contains(err.Error(), "Config.Region") {
		t.Fatalf("err %v, want one asking for Config.Region", err)
	}
}
