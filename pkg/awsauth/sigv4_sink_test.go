package awsauth

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

type recordingSink struct{ got []string }

func (r *recordingSink) Add(secrets ...string) { r.got = append(r.got, secrets...) }

type okTransport struct{ sent int }

func (o *okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	o.sent++
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

// TestSecretSinkAndControlCharacters: the sink learns exactly the credentials used to sign,
// and credentials with a line break are refused as a credentials problem before any
// request leaves (net/http would otherwise say only "invalid header field value").
func TestSecretSinkAndControlCharacters(t *testing.T) {
	tests := []struct {
		name             string
		key, secret, tok string
		wantErr          bool
	}{
		{"clean", "AKIDSINK", "sink-secret", "sink-token", false},
		{"key with a newline", "AKID\nSINK", "sink-secret", "", true},
		{"token with a carriage return", "AKIDSINK", "sink-secret", "tok\r", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recordingSink{}
			next := &okTransport{}
			ep := Endpoint{URL: &url.URL{Scheme: "https", Host: "monitoring.us-east-1.amazonaws.com"}, Region: "us-east-1"}
			rt := Transport(next, credentials.NewStaticCredentialsProvider(tc.key, tc.secret, tc.tok), ep, sink)
			req, _ := http.NewRequest(http.MethodGet, ep.URL.String()+"/api/v1/labels", nil)
			_, err := rt.RoundTrip(req)
			var ce *CredentialsError
			if tc.wantErr {
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), "line break") || next.sent != 0 {
					t.Errorf("err %v, %d sent; want a CredentialsError naming the line break and nothing sent", err, next.sent)
				}
			} else if err != nil || next.sent != 1 {
				t.Fatalf("err %v, %d sent", err, next.sent)
			}
			if !slices.Equal(sink.got, []string{tc.key, tc.secret, tc.tok}) {
				t.Errorf("sink learnt %q", sink.got)
			}
		})
	}
}
