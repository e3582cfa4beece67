package sigv4verify

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

const (
	testRegion = "us-east-1"
	testKey    = "AKIDTESTKEY"
	testSecret = "test-secret-never-printed"
	testToken  = "test-session-token"
)

var testNow = time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func staticCreds(key, secret, token string) aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(key, secret, token)
}

// echoServer verifies every request and echoes what the handler saw.
func echoServer(t *testing.T, v *Verifier) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := v.Verify(r); err != nil {
			WriteAuthError(w, err)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"method":        r.Method,
			"path":          r.URL.EscapedPath(),
			"form":          r.Form,
			"authorization": r.Header.Get("Authorization"),
			"chunked":       len(r.TransferEncoding) > 0,
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testVerifier() *Verifier {
	return &Verifier{
		Region: testRegion,
		// No Service: the default must be the one awsauth signs for.
		Credentials: map[string]Credential{
			testKey:         {AccessKeyID: testKey, SecretAccessKey: testSecret},
			"AKIDWITHTOKEN": {AccessKeyID: "AKIDWITHTOKEN", SecretAccessKey: testSecret, SessionToken: testToken},
		},
		Now: fixedClock(testNow),
	}
}

type echoed struct {
	Method        string              `json:"method"`
	Path          string              `json:"path"`
	Form          map[string][]string `json:"form"`
	Authorization string              `json:"authorization"`
	Chunked       bool                `json:"chunked"`
}

func TestRoundTripperSignaturesVerify(t *testing.T) {
	expr := `sum by ("@resource.host.id") (rate({"vllm:num_requests_running", "@aws.region"="us-east-1"}[5m]))`
	tests := []struct {
		name     string
		method   string
		path     string // escaped path as sent
		query    url.Values
		form     url.Values
		creds    aws.CredentialsProvider
		header   map[string]string
		noReplay bool // body without GetBody, so the signer must buffer it
		wantForm url.Values
	}{
		{
			name: "GET query with quotes, braces and @", method: http.MethodGet, path: "/api/v1/query",
			query: url.Values{"query": {expr}, "time": {"1780662000.5"}, "limit": {"500"}},
			creds: staticCreds(testKey, testSecret, ""),
		},
		{
			name: "GET label values with %40 in the path", method: http.MethodGet, path: "/api/v1/label/%40resource.host.id/values",
			query: url.Values{"match[]": {`{"@aws.region"="us-east-1"}`}},
			creds: staticCreds(testKey, testSecret, ""),
		},
		{
			name: "POST form body", method: http.MethodPost, path: "/api/v1/query_range",
			form:  url.Values{"query": {expr}, "start": {"1780662000"}, "end": {"1780665600"}, "step": {"60"}},
			creds: staticCreds(testKey, testSecret, ""),
		},
		{
			name: "POST body without GetBody", method: http.MethodPost, path: "/api/v1/series",
			form:  url.Values{"match[]": {`{"@resource.host.id"=~"i-.*"}`, `up`}},
			creds: staticCreds(testKey, testSecret, ""), noReplay: true,
		},
		{
			name: "session token", method: http.MethodPost, path: "/api/v1/query",
			form:  url.Values{"query": {"up"}},
			creds: staticCreds("AKIDWITHTOKEN", testSecret, testToken),
		},
		{
			name: "extra headers are not signed", method: http.MethodGet, path: "/api/v1/labels",
			query:  url.Values{"limit": {"10000"}, "match[]": {"up"}},
			creds:  staticCreds(testKey, testSecret, ""),
			header: map[string]string{"User-Agent": "grafana/12", "Accept": "application/json", "X-Grafana-Org-Id": "1"},
		},
		{
			name: "query with space and plus", method: http.MethodGet, path: "/api/v1/query",
			query: url.Values{"query": {"a + b"}, "a b": {"c+d"}},
			creds: staticCreds(testKey, testSecret, ""),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := echoServer(t, testVerifier())
			// A "proxy" below the signer adds headers after signing; the signature must survive it.
			proxy := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				r.Header.Set("X-Forwarded-For", "10.0.0.1")
				r.Header.Set("Via", "1.1 proxy")
				return http.DefaultTransport.RoundTrip(r)
			})
			client := &http.Client{Transport: awsauth.NewSigner(proxy, tc.creds, testRegion, awsauth.SigningService, fixedClock(testNow))}

			u, err := url.Parse(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			u.RawQuery = tc.query.Encode()
			var body io.Reader
			if tc.form != nil {
				body = strings.NewReader(tc.form.Encode())
				if tc.noReplay {
					body = io.MultiReader(body) // hides the type, so http.NewRequest sets no GetBody
				}
			}
			req, err := http.NewRequest(tc.method, u.String(), body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			before := req.Header.Clone()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			var got echoed
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.Path != tc.path {
				t.Errorf("server saw path %q, want %q as sent", got.Path, tc.path)
			}
			want := url.Values{}
			for k, v := range tc.query {
				want[k] = v
			}
			for k, v := range tc.form {
				want[k] = v
			}
			if !equalValues(got.Form, want) {
				t.Errorf("server saw form %v, want %v", got.Form, want)
			}
			_, signed, _ := strings.Cut(got.Authorization, "SignedHeaders=")
			signed, _, _ = strings.Cut(signed, ",")
			for h := range strings.SplitSeq(signed, ";") {
				if h != "host" && !strings.HasPrefix(h, "x-amz-") {
					t.Errorf("signed header %q: only host and x-amz-* may be signed (%s)", h, signed)
				}
			}
			if got.Chunked {
				t.Error("the body went out chunked; a buffered body has a known length")
			}
			if !equalHeader(req.Header, before) {
				t.Errorf("the caller's request was modified: %v, was %v", req.Header, before)
			}
		})
	}
}

func TestVerifierRejections(t *testing.T) {
	tamper := func(f func(r *http.Request)) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			f(r)
			return http.DefaultTransport.RoundTrip(r)
		})
	}
	tests := []struct {
		name      string
		unsigned  bool
		creds     aws.CredentialsProvider
		region    string
		service   string
		clock     time.Time
		next      http.RoundTripper
		wantType  string
		wantInMsg string
	}{
		{name: "missing authorization", unsigned: true, wantType: TypeMissingToken, wantInMsg: "Missing Authentication Token"},
		{name: "unknown access key", creds: staticCreds("AKIDUNKNOWN", testSecret, ""), wantType: TypeUnrecognized, wantInMsg: MsgInvalidToken},
		{name: "wrong service", service: "aps", wantType: TypeInvalidSignature, wantInMsg: MsgWrongService},
		{name: "wrong region", region: "eu-west-1", wantType: TypeInvalidSignature, wantInMsg: MsgWrongRegion},
		{name: "stale date", clock: testNow.Add(-6 * time.Minute), wantType: TypeInvalidSignature, wantInMsg: "Signature expired: 20260605T115400Z is now earlier than 20260605T115500Z (20260605T120000Z - 5 min.)"},
		{name: "future date", clock: testNow.Add(6 * time.Minute), wantType: TypeInvalidSignature, wantInMsg: "Signature not yet current"},
		{name: "wrong secret", creds: staticCreds(testKey, "other-secret", ""), wantType: TypeSignatureMismatch, wantInMsg: MsgSignatureMismatch},
		{name: "session token missing", creds: staticCreds("AKIDWITHTOKEN", testSecret, ""), wantType: TypeUnrecognized, wantInMsg: MsgInvalidToken},
		{name: "session token wrong", creds: staticCreds("AKIDWITHTOKEN", testSecret, "other-token"), wantType: TypeUnrecognized, wantInMsg: MsgInvalidToken},
		{name: "session token not expected", creds: staticCreds(testKey, testSecret, testToken), wantType: TypeUnrecognized, wantInMsg: MsgInvalidToken},
		{
			name: "body changed after signing", wantType: TypeSignatureMismatch, wantInMsg: "does not match",
			next: tamper(func(r *http.Request) {
				b := "query=evil"
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(b)), int64(len(b))
			}),
		},
		{name: "query changed after signing", wantType: TypeSignatureMismatch, next: tamper(func(r *http.Request) { r.URL.RawQuery += "&limit=1" })},
		{name: "path changed after signing", wantType: TypeSignatureMismatch, next: tamper(func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/api/v1/series", "" })},
		{name: "signed x-amz header changed", wantType: TypeSignatureMismatch, next: tamper(func(r *http.Request) { r.Header.Set("X-Amz-Date", "20260605T120001Z") })},
		{name: "malformed authorization", wantType: TypeIncomplete, next: tamper(func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=x") })},
		{name: "other algorithm", wantType: TypeIncomplete, next: tamper(func(r *http.Request) { r.Header.Set("Authorization", "Basic Zm9vOmJhcg==") })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := echoServer(t, testVerifier())
			if tc.creds == nil {
				tc.creds = staticCreds(testKey, testSecret, "")
			}
			if tc.region == "" {
				tc.region = testRegion
			}
			if tc.clock.IsZero() {
				tc.clock = testNow
			}
			var rt http.RoundTripper = http.DefaultTransport
			if !tc.unsigned {
				rt = awsauth.NewSigner(tc.next, tc.creds, tc.region, tc.service, fixedClock(tc.clock))
			}
			form := url.Values{"query": {`up{"@resource.host.id"="i-1"}`}}
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/query", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := (&http.Client{Transport: rt}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Type    string `json:"__type"`
				Message string `json:"message"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("status %d, want 403", resp.StatusCode)
			}
			if body.Type != tc.wantType || resp.Header.Get("x-amzn-ErrorType") != tc.wantType {
				t.Errorf("type %q / header %q, want %q (%s)", body.Type, resp.Header.Get("x-amzn-ErrorType"), tc.wantType, body.Message)
			}
			if !strings.Contains(body.Message, tc.wantInMsg) {
				t.Errorf("message %q does not contain %q", body.Message, tc.wantInMsg)
			}
			if len(resp.Header.Get("x-amzn-RequestId")) != 36 {
				t.Errorf("x-amzn-RequestId %q is not a UUID", resp.Header.Get("x-amzn-RequestId"))
			}
			if strings.Contains(body.Message, testSecret) {
				t.Error("the secret leaked into the error")
			}
		})
	}
}

// TestVerifierAWSTestVector checks the verifier against the "get-vanilla"
// case of AWS's published SigV4 test suite, independent of any signer here.
func TestVerifierAWSTestVector(t *testing.T) {
	v := &Verifier{
		Region: "us-east-1", Service: "service",
		Credentials: map[string]Credential{"AKIDEXAMPLE": {AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}},
		Now:         fixedClock(time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)),
	}
	for _, tc := range []struct {
		sig     string
		wantErr bool
	}{
		{sig: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{sig: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf30", wantErr: true},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://example.amazonaws.com/", nil)
		req.Header.Set("X-Amz-Date", "20150830T123600Z")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature="+tc.sig)
		if err := v.Verify(req); (err != nil) != tc.wantErr {
			t.Errorf("signature %s: error %v, want error %v", tc.sig, err, tc.wantErr)
		}
	}
}

func TestVerifierContentSHA256Header(t *testing.T) {
	for _, tc := range []struct {
		name, declared string
		wantErr        bool
	}{
		{name: "matching hash", declared: "computed"},
		{name: "unsigned payload", declared: "UNSIGNED-PAYLOAD"},
		{name: "wrong hash", declared: hexSHA256(""), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "query=up"
			declared := tc.declared
			if declared == "computed" {
				declared = hexSHA256(body)
			}
			req := httptest.NewRequest(http.MethodPost, "http://monitoring.us-east-1.amazonaws.com/api/v1/query", strings.NewReader(body))
			req.Header.Set("X-Amz-Content-Sha256", declared)
			wire := signViaWire(t, req, staticCreds(testKey, testSecret, ""))
			err := testVerifier().Verify(wire)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if got, _ := io.ReadAll(wire.Body); string(got) != body {
				t.Errorf("body after Verify = %q, want %q for the handler", got, body)
			}
		})
	}
}

func TestCredentialStringRedacts(t *testing.T) {
	c := Credential{AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: testToken}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, c); strings.Contains(s, testSecret) || strings.Contains(s, testToken) {
			t.Errorf("%s printed a secret: %s", format, s)
		}
	}
}

func TestWriteAuthErrorOtherError(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteAuthError(rec, errors.New("boom"))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("x-amzn-ErrorType") != "InternalFailure" {
		t.Errorf("got %d %q", rec.Code, rec.Header().Get("x-amzn-ErrorType"))
	}
}

// FuzzSignVerify signs arbitrary label names, expressions and bodies, sends
// them through the HTTP wire format and checks the independent verifier
// accepts every one of them.
func FuzzSignVerify(f *testing.F) {
	f.Add("@resource.host.id", `{"@aws.region"="us-east-1"}`, "query=up")
	f.Add("__name__", `rate(x[5m]) + 1`, "")
	f.Add("a b/c%", `{"a"=~".*\\"}`, "match%5B%5D=%7Bx%7D&limit=10")
	f.Add("ünïcode", "sum(\u00e9)", "\x00\xff")
	f.Fuzz(func(t *testing.T, label, expr, body string) {
		u := &url.URL{Scheme: "http", Host: "monitoring.us-east-1.amazonaws.com",
			Path: "/api/v1/label/" + label + "/values", RawPath: "/api/v1/label/" + url.PathEscape(label) + "/values",
			RawQuery: url.Values{"match[]": {expr}}.Encode()}
		req, err := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(body))
		if err != nil {
			t.Skip()
		}
		wire := signViaWire(t, req, staticCreds(testKey, testSecret, ""))
		if wire == nil {
			t.Skip()
		}
		if err := testVerifier().Verify(wire); err != nil {
			t.Fatalf("signed request rejected: %v (path %q, query %q)", err, wire.URL.EscapedPath(), wire.URL.RawQuery)
		}
	})
}

// FuzzVerifyUntrusted feeds arbitrary, unsigned input to the verifier, as an
// attacker could: it must reject without panicking and never accept.
func FuzzVerifyUntrusted(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDTESTKEY/20260605/us-east-1/monitoring/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", "20260605T120000Z", "/api/v1/query", "query=up")
	f.Add("AWS4-HMAC-SHA256 Credential=/////, SignedHeaders=;;, Signature==", "", "/%zz", "a=%")
	f.Add("AWS4-HMAC-SHA256 ,,,", "2026", "//", ";")
	f.Fuzz(func(t *testing.T, authz, date, path, query string) {
		req := httptest.NewRequest(http.MethodGet, "http://monitoring.us-east-1.amazonaws.com/", nil)
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery = path, "", query
		req.Header.Set("Authorization", authz)
		req.Header.Set("X-Amz-Date", date)
		err := testVerifier().Verify(req)
		var ae *AuthError
		if !errors.As(err, &ae) {
			t.Fatalf("unsigned input accepted or odd error: %v", err)
		}
		if ae.Status < 400 || ae.Type == "" || ae.Message == "" {
			t.Fatalf("incomplete rejection %+v", ae)
		}
	})
}

// signViaWire signs req, writes it in HTTP/1.1 wire format and parses it back
// as a server would, without a network. It returns nil when the wire cannot
// carry the request.
func signViaWire(t testing.TB, req *http.Request, creds aws.CredentialsProvider) *http.Request {
	t.Helper()
	var wire *http.Request
	capture := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		var buf bytes.Buffer
		if err := r.Write(&buf); err != nil {
			return nil, err
		}
		parsed, err := http.ReadRequest(bufio.NewReader(&buf))
		if err != nil {
			return nil, err
		}
		wire = parsed
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
	})
	if _, err := awsauth.NewSigner(capture, creds, testRegion, awsauth.SigningService, fixedClock(testNow)).RoundTrip(req); err != nil {
		var ce *awsauth.CredentialsError
		if errors.As(err, &ce) {
			t.Fatal(err)
		}
		return nil
	}
	return wire
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func equalValues(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb := b[k]
		if len(va) != len(vb) {
			return false
		}
		for i := range va {
			if va[i] != vb[i] {
				return false
			}
		}
	}
	return true
}

// hexSHA256 is the payload hash SigV4 declares for body.
func hexSHA256(body string) string {
	h := sha256.Sum256([]byte(body))
	return hex.EncodeToString(h[:])
}

func equalHeader(a, b http.Header) bool { return equalValues(a, b) }
