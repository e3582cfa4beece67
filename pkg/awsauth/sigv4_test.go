package awsauth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// The signatures themselves are checked against the independent verifier in
// internal/sigv4verify (whose tests sign with this package); these tests cover the signer alone.

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

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type failingProvider struct{ err error }

func (p failingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{}, p.err
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestRoundTripperErrors: signing fails before anything is sent, with a CredentialsError
// carrying the provider's cause (none for an empty key id); a missing region is no
// credentials problem and its message names the setting.
func TestRoundTripperErrors(t *testing.T) {
	noIMDS := errors.New("no EC2 IMDS role found")
	var empty *credentials.StaticCredentialsEmptyError
	tests := []struct {
		name    string
		creds   aws.CredentialsProvider
		region  string
		wantCre bool
		cause   func(*CredentialsError) bool
	}{
		{name: "provider fails", creds: failingProvider{noIMDS}, region: testRegion, wantCre: true,
			cause: func(ce *CredentialsError) bool { return errors.Is(ce.Err, noIMDS) }},
		{name: "empty keys", creds: staticCreds("", "", ""), region: testRegion, wantCre: true,
			cause: func(ce *CredentialsError) bool { return errors.As(ce.Err, &empty) }},
		{name: "secret without key id", creds: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{SecretAccessKey: testSecret}, nil
		}), region: testRegion, wantCre: true, cause: func(ce *CredentialsError) bool { return ce.Err == nil }},
		{name: "no provider", region: testRegion, wantCre: true, cause: func(ce *CredentialsError) bool { return ce.Err != nil }},
		{name: "no region", creds: staticCreds(testKey, testSecret, "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			next := roundTripFunc(func(*http.Request) (*http.Response, error) { called = true; return nil, errors.New("unreachable") })
			body := &closeRecorder{Reader: strings.NewReader("query=up")}
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/api/v1/query", body)
			_, err := NewSigner(next, tc.creds, tc.region, "", nil).RoundTrip(req)
			if err == nil {
				t.Fatal("want an error")
			}
			var ce *CredentialsError
			if errors.As(err, &ce) != tc.wantCre {
				t.Fatalf("error %v: CredentialsError = %v, want %v", err, errors.As(err, &ce), tc.wantCre)
			}
			if tc.wantCre && !tc.cause(ce) {
				t.Errorf("CredentialsError %#v: unexpected cause %#v", ce, ce.Err)
			}
			if !tc.wantCre && !strings.Contains(err.Error(), "jsonData.defaultRegion") {
				t.Errorf("error %q does not name the region setting", err)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Error("the secret leaked into the error")
			}
			if called {
				t.Error("a request left although signing failed")
			}
			if !body.closed {
				t.Error("the request body was not closed")
			}
		})
	}
}

// TestCredentialsErrorNamesTheFix: with a cause or without, the message points at the
// datasource's authentication settings.
func TestCredentialsErrorNamesTheFix(t *testing.T) {
	for _, err := range []error{&CredentialsError{}, &CredentialsError{Err: errors.New("no EC2 IMDS role found")}} {
		if !strings.Contains(err.Error(), "check the datasource's authentication settings (authType") {
			t.Errorf("message %q does not name the fix", err)
		}
	}
}
