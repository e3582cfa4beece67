package awsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// fakeSTS answers GetCallerIdentity as STS does in the Query protocol: a form POST to /,
// signed for "sts", answered in XML; fail, when set, is the error code it answers instead.
type fakeSTS struct {
	t        *testing.T
	verifier sigv4verify.Verifier
	account  string
	fail     string
	status   int

	mu    sync.Mutex
	hosts map[string]bool
}

func (f *fakeSTS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hosts[r.Host] = true
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	if err := f.verifier.Verify(r); err != nil {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>SignatureDoesNotMatch</Code><Message>%v</Message></Error></ErrorResponse>`, err)
		return
	}
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.URL.Path != "/" ||
		r.PostForm.Get("Action") != "GetCallerIdentity" || r.PostForm.Get("Version") != "2011-06-15" {
		f.t.Errorf("%s %s form %v (%v): want POST / Action=GetCallerIdentity&Version=2011-06-15", r.Method, r.URL.Path, r.PostForm, err)
	}
	if f.fail != "" {
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>refused by the fake</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`, f.fail)
		return
	}
	fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
		`<Arn>arn:aws:iam::%[1]s:user/dev</Arn><UserId>AIDAEXAMPLE</UserId><Account>%[1]s</Account>`+
		`</GetCallerIdentityResult><ResponseMetadata><RequestId>r-2</RequestId></ResponseMetadata></GetCallerIdentityResponse>`, f.account)
}

func TestCallerIdentity(t *testing.T) {
	cases := []struct {
		name    string
		fake    *fakeSTS
		custom  bool   // the fake is the data source's custom endpoint, else STS's regional host
		down    bool   // nothing listens at the endpoint
		secret  string // signs with this secret instead of the fake's
		host    string // where the call must go
		account string // "" when it must fail
		msg     []string
	}{
		{name: "regional host", fake: &fakeSTS{account: "111122223333"}, host: "sts.us-east-1.amazonaws.com", account: "111122223333"},
		{name: "custom endpoint serves STS", fake: &fakeSTS{account: "444455556666"}, custom: true, account: "444455556666"},
		{name: "access denied", fake: &fakeSTS{fail: "AccessDenied", status: http.StatusForbidden}, host: "sts.us-east-1.amazonaws.com",
			msg: []string{"sts:GetCallerIdentity", "AccessDenied", "sts.us-east-1.amazonaws.com", "VPC endpoint policy"}},
		{name: "region disabled", fake: &fakeSTS{fail: "RegionDisabledException", status: http.StatusForbidden}, host: "sts.us-east-1.amazonaws.com",
			msg: []string{"RegionDisabledException", "activate STS in us-east-1"}},
		{name: "wrong secret", fake: &fakeSTS{account: "111122223333"}, secret: "not/the/secret", custom: true,
			msg: []string{"SignatureDoesNotMatch", "check the access and secret key"}},
		{name: "not an account id", fake: &fakeSTS{account: "not-an-account"}, host: "sts.us-east-1.amazonaws.com",
			msg: []string{"not a 12-digit account id", "no proxy rewrites answers"}},
		{name: "endpoint does not answer", fake: &fakeSTS{}, custom: true, down: true, msg: []string{"STS did not answer", "let the Grafana server reach 127.0.0.1:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake
			f.t, f.hosts = t, map[string]bool{}
			f.verifier = sigv4verify.Verifier{Region: testRegion, Service: "sts",
				Credentials: map[string]sigv4verify.Credential{testKey: {AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: testToken}}}
			s := awsauth.Settings{AuthType: awsauth.AuthKeys, AccessKey: testKey, SecretKey: testSecret, SessionToken: testToken, Region: testRegion}
			if tc.secret != "" {
				s.SecretKey = awsauth.Secret(tc.secret)
			}
			o := options{backoff: noWait, base: inMemory{f}}
			if tc.custom {
				srv := httptest.NewServer(f)
				s.Endpoint, o.base = srv.URL, nil
				tc.host = strings.TrimPrefix(srv.URL, "http://")
				if tc.down {
					srv.Close()
				} else {
					t.Cleanup(srv.Close)
				}
			}
			ep, err := awsauth.ResolveEndpoint(s)
			if err != nil {
				t.Fatal(err)
			}
			creds, err := awsauth.NewCredentialsProvider(context.Background(), s, awsauth.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			sink := &secrets{}
			c := newIdentity(creds, ep, sink, o)
			t.Cleanup(c.CloseIdleConnections)

			account, arn, err := c.CallerIdentity(context.Background())
			if !tc.down && (len(f.hosts) != 1 || !f.hosts[tc.host]) {
				t.Errorf("asked %v, want only %s", f.hosts, tc.host)
			}
			if tc.account != "" {
				if err != nil || account != tc.account || arn != "arn:aws:iam::"+tc.account+":user/dev" {
					t.Fatalf("got %q %q %v, want account %s", account, arn, err, tc.account)
				}
				if !sink.has(testSecret) {
					t.Error("the signing secret was not reported for redaction")
				}
				return
			}
			var ie *IdentityError
			if !errors.As(err, &ie) || account != "" || arn != "" {
				t.Fatalf("got %q %q %v, want an *IdentityError", account, arn, err)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not contain %q", err, m)
				}
			}
			// No IAM policy can deny the call: telling the user to grant it would mislead.
			if IsPermission(err) || strings.Contains(err.Error(), "add it to the IAM policy") {
				t.Errorf("%v is worded as a missing IAM permission", err)
			}
			if !backend.IsDownstreamError(err) {
				t.Errorf("%v is not a downstream error", err)
			}
			if strings.Contains(err.Error(), testSecret) || strings.Contains(err.Error(), testToken) {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}
