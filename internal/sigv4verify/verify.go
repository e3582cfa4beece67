// Package sigv4verify checks SigV4 signatures the way the AWS front door does, for the
// emulator and for test fakes of CloudWatch and STS. It lives apart from pkg/awsauth so the
// plugin binary never carries it (nothing under pkg/ outside tests imports it).
//
// It re-derives SigV4 from the specification on purpose: it shares no code with the SDK
// signer used by awsauth.NewSigner, so tests that sign with one and verify with the other
// cross-check two implementations. It imports nothing of awsauth either, as awsauth's own
// tests verify with it.
package sigv4verify

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	algorithm     = "AWS4-HMAC-SHA256"
	amzDateLayout = "20060102T150405Z"
	scopeDate     = "20060102"
	// DefaultMaxSkew is how far a request's date may be from the verifier's clock.
	DefaultMaxSkew = 5 * time.Minute
	// DefaultMaxBodyBytes bounds how much body Verify buffers to hash.
	DefaultMaxBodyBytes = 8 << 20
	// CloudWatchService is the signing name a Verifier without a Service expects
	// (awsauth.SigningService; a test holds the two equal).
	CloudWatchService = "monitoring"
)

// Credential is one key pair the verifier accepts. A non-empty SessionToken
// must be presented in X-Amz-Security-Token.
type Credential struct{ AccessKeyID, SecretAccessKey, SessionToken string }

// String keeps secrets out of logs and test failure output.
func (c Credential) String() string {
	return "sigv4verify.Credential{AccessKeyID:" + c.AccessKeyID + ", secret:redacted}"
}

// GoString keeps secrets out of %#v.
func (c Credential) GoString() string { return c.String() }

// Verifier checks SigV4 signatures the way the AWS front door does.
type Verifier struct {
	Region, Service string
	Credentials     map[string]Credential // by access key id
	MaxSkew         time.Duration         // default DefaultMaxSkew
	MaxBodyBytes    int64                 // default DefaultMaxBodyBytes
	Now             func() time.Time      // default time.Now
}

// AuthError is a rejection in AWS terms; Status is the HTTP status to answer with.
type AuthError struct {
	Status        int
	Type, Message string
}

func (e *AuthError) Error() string { return e.Type + ": " + e.Message }

func forbidden(typ, format string, args ...any) *AuthError {
	return &AuthError{Status: http.StatusForbidden, Type: typ, Message: fmt.Sprintf(format, args...)}
}

// Error types and messages as AWS words them.
const (
	TypeMissingToken      = "MissingAuthenticationTokenException"
	TypeIncomplete        = "IncompleteSignatureException"
	TypeInvalidSignature  = "InvalidSignatureException"
	TypeUnrecognized      = "UnrecognizedClientException"
	TypeSignatureMismatch = "SignatureDoesNotMatch"

	MsgWrongService      = "Credential should be scoped to correct service: 'monitoring'."
	MsgWrongRegion       = "Credential should be scoped to a valid region."
	MsgInvalidToken      = "The security token included in the request is invalid."
	MsgSignatureMismatch = "The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
)

// parsedAuth is the Authorization header taken apart.
type parsedAuth struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

func parseAuthorization(h string) (parsedAuth, *AuthError) {
	var p parsedAuth
	alg, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || alg != algorithm {
		return p, forbidden(TypeIncomplete, "Authorization header must use the %s algorithm.", algorithm)
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return p, forbidden(TypeIncomplete, "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters, got malformed part %q.", part)
		}
		fields[k] = v
	}
	for _, k := range []string{"Credential", "SignedHeaders", "Signature"} {
		if fields[k] == "" {
			return p, forbidden(TypeIncomplete, "Authorization header requires '%s' parameter.", k)
		}
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return p, forbidden(TypeIncomplete, "Credential must have the form <access key>/<date>/<region>/<service>/aws4_request.")
	}
	p.accessKey, p.date, p.region, p.service = scope[0], scope[1], scope[2], scope[3]
	p.signedHeaders = strings.Split(fields["SignedHeaders"], ";")
	p.signature = fields["Signature"]
	return p, nil
}

// Verify checks r's signature. The error, if any, is an *AuthError. The
// body is read to hash it and put back, so the handler can still read it.
func (v *Verifier) Verify(r *http.Request) error {
	// Checked here so a nil *AuthError never becomes a non-nil error interface.
	if err := v.verify(r); err != nil {
		return err
	}
	return nil
}

func (v *Verifier) verify(r *http.Request) *AuthError {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return forbidden(TypeMissingToken, "Missing Authentication Token")
	}
	p, aerr := parseAuthorization(authz)
	if aerr != nil {
		return aerr
	}
	service := v.Service
	if service == "" {
		service = CloudWatchService
	}
	if p.service != service {
		if service == CloudWatchService {
			return forbidden(TypeInvalidSignature, MsgWrongService)
		}
		return forbidden(TypeInvalidSignature, "Credential should be scoped to correct service: '%s'.", service)
	}
	if p.region != v.Region {
		return forbidden(TypeInvalidSignature, MsgWrongRegion)
	}

	amzDate := r.Header.Get("X-Amz-Date")
	if amzDate == "" {
		return forbidden(TypeIncomplete, "Authorization header requires existence of a 'X-Amz-Date' header.")
	}
	signedAt, err := time.Parse(amzDateLayout, amzDate)
	if err != nil {
		return forbidden(TypeIncomplete, "X-Amz-Date must be in the ISO-8601 basic format %s, got %q.", amzDateLayout, amzDate)
	}
	if p.date != signedAt.Format(scopeDate) {
		return forbidden(TypeInvalidSignature, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from '%s'.", p.date, signedAt.Format(scopeDate), amzDate)
	}
	if aerr := v.checkSkew(signedAt); aerr != nil {
		return aerr
	}
	if !contains(p.signedHeaders, "host") {
		return forbidden(TypeInvalidSignature, "'Host' must be a 'SignedHeader' in the AWS Authorization.")
	}
	if !contains(p.signedHeaders, "x-amz-date") {
		return forbidden(TypeInvalidSignature, "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization.")
	}

	cred, ok := v.Credentials[p.accessKey]
	if !ok {
		return forbidden(TypeUnrecognized, MsgInvalidToken)
	}
	if got := r.Header.Get("X-Amz-Security-Token"); subtle.ConstantTimeCompare([]byte(got), []byte(cred.SessionToken)) != 1 {
		return forbidden(TypeUnrecognized, MsgInvalidToken)
	}

	hash, aerr := v.bodyHash(r)
	if aerr != nil {
		return aerr
	}
	canonical, err := canonicalRequest(r, p.signedHeaders, hash)
	if err != nil {
		return forbidden(TypeInvalidSignature, "%v", err)
	}
	scope := strings.Join([]string{p.date, p.region, p.service, "aws4_request"}, "/")
	want := signature(cred.SecretAccessKey, p.date, p.region, p.service, stringToSign(amzDate, scope, canonical))
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(p.signature))) {
		return forbidden(TypeSignatureMismatch, MsgSignatureMismatch)
	}
	return nil
}

func (v *Verifier) checkSkew(signedAt time.Time) *AuthError {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	skew := v.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	t := now().UTC()
	mins := strconv.FormatFloat(skew.Minutes(), 'f', -1, 64)
	switch {
	case signedAt.Before(t.Add(-skew)):
		return forbidden(TypeInvalidSignature, "Signature expired: %s is now earlier than %s (%s - %s min.)",
			signedAt.Format(amzDateLayout), t.Add(-skew).Format(amzDateLayout), t.Format(amzDateLayout), mins)
	case signedAt.After(t.Add(skew)):
		return forbidden(TypeInvalidSignature, "Signature not yet current: %s is still later than %s (%s + %s min.)",
			signedAt.Format(amzDateLayout), t.Add(skew).Format(amzDateLayout), t.Format(amzDateLayout), mins)
	}
	return nil
}

// bodyHash hashes the body and restores it for the handler. A declared
// X-Amz-Content-Sha256 must match the body, except UNSIGNED-PAYLOAD.
func (v *Verifier) bodyHash(r *http.Request) (string, *AuthError) {
	sum := sha256.Sum256(nil)
	if r.Body != nil && r.Body != http.NoBody {
		limit := v.MaxBodyBytes
		if limit <= 0 {
			limit = DefaultMaxBodyBytes
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		r.Body.Close()
		if err != nil {
			return "", &AuthError{Status: http.StatusBadRequest, Type: "InvalidRequestException", Message: "reading the request body: " + err.Error()}
		}
		if int64(len(b)) > limit {
			return "", &AuthError{Status: http.StatusRequestEntityTooLarge, Type: "RequestEntityTooLargeException",
				Message: fmt.Sprintf("Request body larger than %d bytes.", limit)}
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		sum = sha256.Sum256(b)
	}
	computed := hex.EncodeToString(sum[:])
	declared := r.Header.Get("X-Amz-Content-Sha256")
	switch declared {
	case "":
		return computed, nil
	case "UNSIGNED-PAYLOAD":
		return declared, nil
	case computed:
		return computed, nil
	}
	return "", forbidden(TypeInvalidSignature, "The provided 'x-amz-content-sha256' header does not match what was computed.")
}

// canonicalRequest builds the SigV4 canonical request from what was received.
func canonicalRequest(r *http.Request, signedHeaders []string, payloadHash string) (string, error) {
	query, err := canonicalQuery(r.URL.RawQuery)
	if err != nil {
		return "", err
	}
	headers, err := canonicalHeaders(r, signedHeaders)
	if err != nil {
		return "", err
	}
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	return strings.Join([]string{
		r.Method,
		// Non-S3 services encode the path once more on top of how it was sent.
		uriEncode(path, false),
		query,
		headers,
		strings.Join(signedHeaders, ";"),
		payloadHash,
	}, "\n"), nil
}

func canonicalQuery(raw string) (string, error) {
	values, err := url.ParseQuery(raw)
	if err != nil {
		return "", fmt.Errorf("the query string cannot be parsed: %v", err)
	}
	pairs := make([]string, 0, len(values))
	for k, vs := range values {
		ek := uriEncode(k, true)
		for _, val := range vs {
			pairs = append(pairs, ek+"="+uriEncode(val, true))
		}
	}
	// Sort by encoded key, then by encoded value.
	sort.Slice(pairs, func(i, j int) bool {
		ki, vi, _ := strings.Cut(pairs[i], "=")
		kj, vj, _ := strings.Cut(pairs[j], "=")
		if ki != kj {
			return ki < kj
		}
		return vi < vj
	})
	return strings.Join(pairs, "&"), nil
}

// canonicalHeaders renders the signed headers; SignedHeaders must already be
// lower case and sorted, as every conforming signer sends them.
func canonicalHeaders(r *http.Request, signed []string) (string, error) {
	var b strings.Builder
	for i, name := range signed {
		if name != strings.ToLower(name) || (i > 0 && signed[i-1] >= name) {
			return "", errors.New("SignedHeaders must be lower case, sorted and without duplicates")
		}
		var values []string
		switch name {
		case "host":
			values = []string{r.Host}
		case "content-length":
			// net/http moves Content-Length out of the header map.
			values = []string{strconv.FormatInt(r.ContentLength, 10)}
		default:
			values = r.Header.Values(name)
		}
		for j, val := range values {
			values[j] = strings.Join(strings.Fields(val), " ")
		}
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(strings.Join(values, ","))
		b.WriteByte('\n')
	}
	return b.String(), nil
}

func stringToSign(amzDate, scope, canonical string) string {
	h := sha256.Sum256([]byte(canonical))
	return algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(h[:])
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func signature(secret, date, region, service, toSign string) string {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	k = hmacSHA256(k, "aws4_request")
	return hex.EncodeToString(hmacSHA256(k, toSign))
}

// uriEncode is the SigV4 URI encoding: everything but A-Z a-z 0-9 - _ . ~ is
// percent-encoded with upper-case hex; '/' is kept unless encodeSlash.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// WriteAuthError answers with the AWS-style error body and headers. An error
// that is not an *AuthError becomes a 500 InternalFailure.
func WriteAuthError(w http.ResponseWriter, err error) {
	var ae *AuthError
	if !errors.As(err, &ae) {
		ae = &AuthError{Status: http.StatusInternalServerError, Type: "InternalFailure", Message: "The request processing has failed because of an unknown error."}
	}
	status := ae.Status
	if status == 0 {
		status = http.StatusForbidden
	}
	body, _ := json.Marshal(map[string]string{"__type": ae.Type, "message": ae.Message})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-amzn-ErrorType", ae.Type)
	h.Set("x-amzn-RequestId", NewRequestID())
	w.WriteHeader(status)
	w.Write(body)
}

// NewRequestID returns a random UUID (version 4) as AWS uses for x-amzn-RequestId.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
