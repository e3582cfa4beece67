package awsauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// SigningService is the SigV4 signing name of CloudWatch (the AMP default "aps" is refused by CloudWatch).
const SigningService = "monitoring"

// emptyPayloadHash is hex(sha256("")), the payload hash of a request without a body.
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// CredentialsError says the signing credentials could not be obtained. It
// never carries the secret itself, only the provider's error.
type CredentialsError struct{ Err error }

func (e *CredentialsError) Error() string {
	if e.Err == nil {
		return "sigv4: no AWS credentials: the provider returned an empty access key id; " + credentialsFix
	}
	return "sigv4: could not get AWS credentials: " + e.Err.Error() + "; " + credentialsFix
}

func (e *CredentialsError) Unwrap() error { return e.Err }

const credentialsFix = "check the datasource's authentication settings (authType; access and secret key for 'keys', " +
	"the profile for 'credentials', the instance role for 'ec2_iam_role', assumeRoleArn/externalId)"

type roundTripper struct {
	next    http.RoundTripper
	creds   aws.CredentialsProvider
	region  string
	service string
	now     func() time.Time
	signer  *v4.Signer
	sink    SecretSink
}

// SecretSink learns the credentials each request is actually signed with, whatever their
// source (keys, default chain, assumed role), so the plugin's redactor can remove them,
// session token included, from anything shown to users. The plugin's redactors implement it.
type SecretSink interface{ Add(secrets ...string) }

// NewSigner returns a transport that signs each request last, just
// before handing it to next. Only the host and x-amz-* headers are signed so
// that proxies or other middleware adding headers cannot break the
// signature. A nil next means http.DefaultTransport, an empty service means
// SigningService and a nil now means time.Now.
func NewSigner(next http.RoundTripper, creds aws.CredentialsProvider, region, service string, now func() time.Time) http.RoundTripper {
	return newSigner(next, creds, region, service, now)
}

func newSigner(next http.RoundTripper, creds aws.CredentialsProvider, region, service string, now func() time.Time) *roundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if service == "" {
		service = SigningService
	}
	if now == nil {
		now = time.Now
	}
	return &roundTripper{next: next, creds: creds, region: region, service: service, now: now, signer: v4.NewSigner()}
}

// Transport is the stack every CloudWatch PromQL client sends through: requests for any
// host but ep's are refused before signing, the rest are signed for ep.Region and handed
// to base (nil: http.DefaultTransport). sink (may be nil) learns every credential signed with.
func Transport(base http.RoundTripper, creds aws.CredentialsProvider, ep Endpoint, sink SecretSink) http.RoundTripper {
	signer := newSigner(base, creds, ep.Region, SigningService, nil)
	signer.sink = sink
	return RestrictToEndpoint(signer, ep)
}

// RestrictToEndpoint refuses, before anything is signed or sent, requests
// whose scheme or host differ from the resolved endpoint. Put it outside the
// signing transport so a stray URL (or a redirect) never gets a signature.
func RestrictToEndpoint(next http.RoundTripper, ep Endpoint) http.RoundTripper {
	return &restricted{next: next, ep: ep}
}

type restricted struct {
	next http.RoundTripper
	ep   Endpoint
}

func (t *restricted) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.ep.Permits(r); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	return t.next.RoundTrip(r)
}

// Permits refuses (with a downstream error naming the allowed endpoint) a request whose
// scheme or host is not ep's. Clients that sign inside their own pipeline (the AWS SDK's
// service clients) call it just before signing, besides RestrictToEndpoint on their transport.
func (ep Endpoint) Permits(r *http.Request) error {
	host := strings.ToLower(r.URL.Host)
	if r.Host != "" {
		host = strings.ToLower(r.Host)
	}
	if r.URL.Scheme != ep.URL.Scheme || host != strings.ToLower(ep.URL.Host) {
		return backend.DownstreamError(fmt.Errorf("refusing to sign a request for %s://%s: only %s://%s (from %s) is allowed",
			r.URL.Scheme, host, ep.URL.Scheme, strings.ToLower(ep.URL.Host), ep.Source))
	}
	return nil
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	signed, err := t.sign(req)
	if err != nil {
		// The RoundTripper contract: the body is closed even on error.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return t.next.RoundTrip(signed)
}

// sign returns a signed copy of req; req itself is not modified (the
// RoundTripper contract), although its body may be consumed.
func (t *roundTripper) sign(req *http.Request) (*http.Request, error) {
	if t.creds == nil {
		return nil, &CredentialsError{Err: errors.New("no credentials provider configured")}
	}
	if t.region == "" {
		return nil, errors.New("sigv4: no region to sign for; set the datasource's default region (jsonData.defaultRegion)")
	}
	creds, err := t.creds.Retrieve(req.Context())
	if err != nil {
		return nil, &CredentialsError{Err: err}
	}
	if creds.AccessKeyID == "" || creds.SecretAccessKey == "" {
		return nil, &CredentialsError{}
	}
	if t.sink != nil {
		t.sink.Add(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	}
	if hasControl(creds.AccessKeyID) || hasControl(creds.SecretAccessKey) || hasControl(creds.SessionToken) {
		// net/http would refuse the header with "invalid header field value", naming nothing.
		return nil, &CredentialsError{Err: errors.New("the access key id, secret key or session token contains a line break or another control character")}
	}

	out := req.Clone(req.Context())
	// A caller-declared payload hash (e.g. UNSIGNED-PAYLOAD) is what AWS verifies against.
	hash := out.Header.Get("X-Amz-Content-Sha256")
	if hash == "" {
		if hash, err = payloadHash(out); err != nil {
			return nil, fmt.Errorf("sigv4: reading the request body to sign it: %w", err)
		}
	}

	// Set aside everything but x-amz-* while signing; host comes from the URL.
	all := out.Header
	all.Del("Authorization")
	all.Del("X-Amz-Date")
	all.Del("X-Amz-Security-Token")
	toSign := http.Header{}
	for k, v := range all {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-") {
			toSign[k] = v
		}
	}
	out.Header = toSign
	// The SDK signs content-length when it is known; keep it out like any other non-x-amz header.
	contentLength := out.ContentLength
	out.ContentLength = 0
	err = t.signer.SignHTTP(req.Context(), creds, out, hash, t.service, t.region, t.now().UTC())
	out.ContentLength = contentLength
	if err != nil {
		return nil, fmt.Errorf("sigv4: signing the request: %w", err)
	}
	for k, v := range out.Header {
		all[k] = v
	}
	out.Header = all
	return out, nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// payloadHash hashes the body without losing it: through GetBody when the
// request can replay it, otherwise by buffering it into the request.
func payloadHash(r *http.Request) (string, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return emptyPayloadHash, nil
	}
	h := sha256.New()
	if r.GetBody != nil {
		rc, err := r.GetBody()
		if err != nil {
			return "", err
		}
		defer rc.Close()
		if _, err := io.Copy(h, rc); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return "", err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	// Now that the length is known, send Content-Length rather than a chunked body.
	r.ContentLength = int64(len(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}
