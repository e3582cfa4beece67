package sigv4

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
// internal/sigv4verify (which imports this package); these tests cover the signer alone.

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

func TestRoundTripperErrors(t *testing.T) {
	tests := []struct {
		name    string
		creds   aws.CredentialsProvider
		region  string
		wantIn  []string
		wantCre bool
	}{
		{name: "provider fails", creds: failingProvider{errors.New("no EC2 IMDS role found")}, region: testRegion, wantIn: []string{"no EC2 IMDS role found", "authType"}, wantCre: true},
		{name: "empty keys", creds: staticCreds("", "", ""), region: testRegion, wantIn: []string{"static credentials are empty", "authType"}, wantCre: true},
		{name: "secret without key id", creds: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{SecretAccessKey: testSecret}, nil
		}), region: testRegion, wantIn: []string{"empty access key"}, wantCre: true},
		{name: "no provider", region: testRegion, wantIn: []string{"no credentials provider"}, wantCre: true},
		{name: "no region", creds: staticCreds(testKey, testSecret, ""), wantIn: []string{"jsonData.defaultRegion"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			next := roundTripFunc(func(*http.Request) (*http.Response, error) { called = true; return nil, errors.New("unreachable") })
			body := &closeRecorder{Reader: strings.NewReader("query=up")}
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/api/v1/query", body)
			_, err := NewRoundTripper(next, tc.creds, tc.region, "", nil).RoundTrip(req)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			var ce *CredentialsError
			if errors.As(err, &ce) != tc.wantCre {
				t.Errorf("CredentialsError = %v, want %v", errors.As(err, &ce), tc.wantCre)
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
