package promclient

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// APIError is CloudWatch (or whatever sits at the endpoint) refusing a call: a non-2xx
// answer, or an error envelope inside a 2xx one.
type APIError struct {
	Status    int    // HTTP status; 2xx when the error came in a success answer's envelope
	Type      string // errorType of the Prometheus envelope, or the AWS error type
	Message   string // CloudWatch's own message
	Cause     Cause  // what the refusal means, decided once from Status, Type and Message
	Throttled bool   // 422 TPS throttling or 429 concurrency throttling
	RequestID string // x-amzn-RequestId, for AWS support
	Attempts  int
}

// Error states the facts; what to do about them is pkg/fault's job.
func (e *APIError) Error() string {
	var b strings.Builder
	switch {
	case e.Status != 0 && e.Status/100 != 2:
		fmt.Fprintf(&b, "CloudWatch answered HTTP %d", e.Status)
		if e.Type != "" {
			b.WriteString(" " + e.Type)
		}
	case e.Type != "":
		b.WriteString("CloudWatch reported " + e.Type)
	default:
		b.WriteString("CloudWatch reported an error")
	}
	b.WriteString(": " + e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.RequestID != "" {
		b.WriteString(" [request id " + e.RequestID + "]")
	}
	return b.String()
}

// Cause is what a refusal means for the user, so that no caller has to read messages.
type Cause int

const (
	CauseOther Cause = iota
	CauseThrottledRate
	CauseThrottledConcurrency
	CauseWrongRegion
	CauseWrongService
	CauseClockSkew
	CauseSignatureMismatch
	CauseUnknownCredentials
	CauseAccessDenied
	CauseRedirect
	CauseNotFound
)

// causeText maps AWS's wording to causes; the first match wins. AWS uses one error type
// (InvalidSignatureException) for several causes, so the message decides.
var causeText = []struct {
	re    *regexp.Regexp
	cause Cause
}{
	{regexp.MustCompile(`(?i)scoped to (a valid|correct) region`), CauseWrongRegion},
	{regexp.MustCompile(`(?i)scoped to correct service`), CauseWrongService},
	{regexp.MustCompile(`(?i)signature expired|not yet current|requestexpired|clock skew`), CauseClockSkew},
	{regexp.MustCompile(`(?i)signaturedoesnotmatch|signature we calculated does not match`), CauseSignatureMismatch},
	{regexp.MustCompile(`(?i)unrecognizedclient|invalidclienttokenid|security token included in the request is invalid|does not exist in our records|missingauthenticationtoken`), CauseUnknownCredentials},
	{regexp.MustCompile(`(?i)accessdenied|not authorized`), CauseAccessDenied},
}

func classifyCause(e *APIError) Cause {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return CauseThrottledConcurrency
	case e.Throttled:
		return CauseThrottledRate
	case e.Status >= 300 && e.Status < 400:
		return CauseRedirect
	case e.Status == http.StatusNotFound:
		return CauseNotFound
	}
	text := e.Type + " " + e.Message
	for _, c := range causeText {
		if c.re.MatchString(text) {
			return c.cause
		}
	}
	if e.Status == http.StatusForbidden {
		return CauseAccessDenied
	}
	return CauseOther
}

// Retryable reports whether sending the same request again may succeed.
func (e *APIError) Retryable() bool {
	return e.Throttled || (e.Status >= 500 && e.Status != http.StatusNotImplemented)
}

// Source: a refusal is CloudWatch's answer to the user's settings or query, never a
// plugin bug.
func (e *APIError) Source() backend.ErrorSource { return backend.ErrorSourceDownstream }

// Is lets backend.IsDownstreamError (and errors.Is with an ErrorWithSource)
// see the source, the way the SDK's own errors match.
func (e *APIError) Is(target error) bool {
	t, ok := target.(backend.ErrorWithSource)
	return ok && t.ErrorSource() == e.Source()
}

// throttleText matches CloudWatch's rate-limit wording; other 422s (range,
// samples, timeout) must not be retried.
var throttleText = regexp.MustCompile(`(?i)throttl|rate exceeded|rate limit|too many requests|requests per second|transactions per second|\btps\b`)

// maxMessage bounds how much of an unstructured body ends up in an error.
const maxMessage = 512

// maxErrorBody bounds how much of a non-2xx body is read.
const maxErrorBody = 1 << 20

// parseError reads a non-2xx answer with the one envelope reader, leniently: a body that
// is not JSON becomes the message.
func parseError(status int, h http.Header, body []byte) *APIError {
	e := &APIError{Status: status, RequestID: h.Get("x-amzn-RequestId")}
	env, err := ReadEnvelope(bytes.NewReader(body), nil)
	var me *MalformedError
	if errors.As(err, &me) && env.Status == "" && env.Error == "" && env.AWSMessage == "" {
		e.Type = awsType(h.Get("x-amzn-ErrorType"))
		e.Message = truncate(strings.TrimSpace(string(body)))
	} else {
		e.Type = firstNonEmpty(env.ErrorType, awsType(env.AWSType), awsType(h.Get("x-amzn-ErrorType")), env.Code)
		e.Message = firstNonEmpty(env.Error, env.AWSMessage)
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	e.Throttled = status == http.StatusTooManyRequests ||
		(status == http.StatusUnprocessableEntity && throttleText.MatchString(e.Type+" "+e.Message))
	e.Cause = classifyCause(e)
	return e
}

// TooLargeError is an answer beyond what the plugin holds for one query: bytes of body
// (promclient) or points of frames (converter). Retrying cannot help; the query must ask
// for less.
type TooLargeError struct {
	Limit int64
	Unit  string // "bytes", "points"
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("CloudWatch's answer holds more than %d %s, more than the plugin keeps for one query: "+
		"narrow the query (fewer series: more label matchers or an aggregation; a shorter time range) or raise the step (the query's Min interval)", e.Limit, e.Unit)
}

// BodyError is a 2xx answer whose body was cut off or is not a Prometheus answer: a
// transient upstream fault, retried like a 5xx.
type BodyError struct {
	Status   int
	Bytes    int64 // read before the fault
	Cut      bool  // the connection failed mid-body (else the body was malformed)
	Err      error
	Attempts int
}

func (e *BodyError) Error() string {
	var s string
	if e.Cut {
		s = fmt.Sprintf("CloudWatch's answer was cut off after %d bytes (%v)", e.Bytes, e.Err)
	} else {
		s = fmt.Sprintf("CloudWatch answered HTTP %d with a body that is not a valid answer: %v", e.Status, e.Err)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

func (e *BodyError) Unwrap() error { return e.Err }

// awsType strips the namespace ("com.amazon.coral.service#X") and the
// documentation suffix ("X:http://...") AWS puts around error types.
func awsType(t string) string {
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	if i := strings.IndexByte(t, ':'); i >= 0 {
		t = t[:i]
	}
	return strings.TrimSpace(t)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
