package promclient

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// APIError is a non-2xx answer from CloudWatch (or whatever sits at the endpoint).
type APIError struct {
	Status    int
	Type      string // errorType of the Prometheus envelope, or the AWS error type
	Message   string // CloudWatch's own message
	Throttled bool   // 422 TPS throttling or 429 concurrency throttling
	RequestID string // x-amzn-RequestId, for AWS support
	Attempts  int
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CloudWatch answered HTTP %d", e.Status)
	if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	b.WriteString(": " + e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if h := e.Hint(); h != "" {
		b.WriteString(". " + h)
	}
	if e.RequestID != "" {
		b.WriteString(" [request id " + e.RequestID + "]")
	}
	return b.String()
}

// Hint says what to do about the error, when there is something to say.
func (e *APIError) Hint() string {
	switch {
	case e.Status == http.StatusForbidden:
		return "Check the credentials (access key and secret, profile or role), that the region matches the endpoint, " +
			"that the Grafana server's clock is right, and that the identity may call cloudwatch:GetMetricData and cloudwatch:ListMetrics"
	case e.Status == http.StatusTooManyRequests:
		return "Too many concurrent requests for this AWS account (CloudWatch allows 30 queries and 30 discovery calls at once): " +
			"lower the datasource's max concurrency, show fewer panels at once or refresh less often"
	case e.Status == http.StatusUnprocessableEntity && e.Throttled:
		return "CloudWatch's per-account request rate was exceeded (300 queries and 10 discovery calls per second): " +
			"lower the datasource's requests per second, refresh dashboards less often or cache template variables"
	case e.Status >= 300 && e.Status < 400:
		return "The endpoint redirected instead of answering; set the endpoint to https://monitoring.<region>.amazonaws.com"
	case e.Status == http.StatusNotFound:
		return "The endpoint does not serve this API path; check that it is CloudWatch (https://monitoring.<region>.amazonaws.com)"
	}
	return ""
}

// Retryable reports whether sending the same request again may succeed.
func (e *APIError) Retryable() bool {
	return e.Throttled || (e.Status >= 500 && e.Status != http.StatusNotImplemented)
}

// Source tells Grafana whose fault the error is, by HTTP status.
func (e *APIError) Source() backend.ErrorSource { return backend.ErrorSourceFromHTTPStatus(e.Status) }

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

// parseError reads the Prometheus envelope or an AWS-style body, leniently.
func parseError(r *Response) *APIError {
	e := &APIError{Status: r.Status, RequestID: r.Header.Get("x-amzn-RequestId")}
	var body struct {
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Type      string `json:"__type"`
		Code      string `json:"code"`
		Message   string `json:"message"`
		MessageUC string `json:"Message"`
	}
	if json.Unmarshal(r.Body, &body) == nil {
		e.Type = firstNonEmpty(body.ErrorType, awsType(body.Type), awsType(r.Header.Get("x-amzn-ErrorType")), body.Code)
		e.Message = firstNonEmpty(body.Error, body.Message, body.MessageUC)
	} else {
		e.Type = awsType(r.Header.Get("x-amzn-ErrorType"))
		e.Message = truncate(strings.TrimSpace(string(r.Body)))
	}
	if e.Message == "" {
		e.Message = http.StatusText(r.Status)
	}
	e.Throttled = r.Status == http.StatusTooManyRequests ||
		(r.Status == http.StatusUnprocessableEntity && throttleText.MatchString(e.Type+" "+e.Message))
	return e
}

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
