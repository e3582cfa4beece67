// Package fault decides, once, what a failure means for the user: the status, whose fault
// it is (Grafana's error source) and the message with its fix. Errors stay typed until they
// get here; QueryData, resources, health, diagnosis and the diagnose CLI all call Explain,
// so one failure reads the same everywhere.
package fault

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Problem is a failure as the user sees it.
type Problem struct {
	Status  backend.Status
	Source  backend.ErrorSource
	Message string
}

// Context is what a message may point at; empty fields are left out.
type Context struct {
	Endpoint string // the endpoint as shown to users (redacted URL)
	Region   string // the signing region
	Action   string // the IAM permission the failed call needs, e.g. cloudwatch:GetMetricData
	// Names are the caller's words for what a fix changes; the zero value is the datasource's.
	Names Names
}

// Names are a front end's words for the settings and the machine a message asks the user to
// fix, so the diagnose CLI names its flags where the datasource names its fields. A caller
// that gives Names gives every field.
type Names struct {
	Region      string // the signing region's setting
	Endpoint    string // where the endpoint is set
	Credentials string // where the credentials are set
	Identity    string // the AWS identity the requests use
	Timeout     string // the setting that bounds a request's time
	Rate        string // how to send fewer requests per second
	Concurrency string // how to send fewer requests at once
	Machine     string // the machine that sends the requests
}

// datasourceNames are the datasource's words, as its configuration page shows them.
var datasourceNames = Names{
	Region:      "Default Region",
	Endpoint:    "the endpoint URL (or the datasource URL and default region)",
	Credentials: "the access key and secret key (or the profile / role)",
	Identity:    "the user or role the datasource uses",
	Timeout:     "the datasource's query timeout",
	Rate:        "lower the datasource's requests per second, refresh dashboards less often or cache template variables",
	Concurrency: "lower the datasource's max concurrency, show fewer panels at once or refresh less often",
	Machine:     "the Grafana server",
}

// names is c.Names, or the datasource's words when the caller gives none.
func (c Context) names() Names {
	if c.Names == (Names{}) {
		return datasourceNames
	}
	return c.Names
}

// cloudWatch names the upstream in every message the same way.
func (c Context) cloudWatch() string {
	if c.Endpoint == "" {
		return "CloudWatch"
	}
	return "CloudWatch (" + c.Endpoint + ")"
}

// Explain classifies err. Everything caused by settings, the query, CloudWatch or the
// network is downstream, so Grafana's plugin SLOs count only the plugin's own bugs.
func Explain(err error, c Context) Problem {
	var (
		apiErr   *promclient.APIError
		bodyErr  *promclient.BodyError
		tooLarge *promclient.TooLargeError
		credErr  *awsauth.CredentialsError
		malform  *promclient.MalformedError
		limErr   *promclient.LimitError
		awsPerm  *awsapi.PermissionError
		awsErr   *awsapi.Error
	)
	down := func(status backend.Status, msg string) Problem {
		return Problem{Status: status, Source: backend.ErrorSourceDownstream, Message: msg}
	}
	switch {
	case err == nil:
		return Problem{}
	case errors.As(err, &awsPerm):
		// Its message names the IAM action and the fix already.
		return down(backend.StatusForbidden, err.Error())
	case errors.As(err, &awsErr):
		return down(awsStatus(awsErr), err.Error())
	case errors.As(err, &apiErr):
		status := backend.Status(apiErr.Status)
		if apiErr.Status/100 == 2 || apiErr.Status == 0 {
			status = backend.StatusBadGateway // an error envelope inside a success answer
		}
		return down(status, withHint(hint(apiErr, c), err))
	case errors.As(err, &tooLarge):
		return down(backend.StatusBadRequest, err.Error())
	case errors.As(err, &bodyErr) && bodyErr.Cut:
		return down(backend.StatusBadGateway, withHint("The connection to "+c.cloudWatch()+" broke while the answer arrived, also on retry: "+
			"try again, and if it persists check proxies and the network between Grafana and CloudWatch", err))
	case errors.As(err, &bodyErr), errors.As(err, &malform):
		return down(backend.StatusBadGateway, withHint(c.cloudWatch()+" sent an answer that is not a Prometheus API response, also on retry: "+
			"check that the endpoint is CloudWatch (https://monitoring.<region>.amazonaws.com) and that no proxy rewrites answers", err))
	case errors.As(err, &limErr):
		// Our own limiter held the request, not CloudWatch and not a slow query: name the setting.
		return down(backend.StatusTooManyRequests, limErr.Error())
	case errors.As(err, &credErr):
		return down(backend.StatusUnauthorized, "AWS credentials could not be resolved: "+credErr.Error())
	case errors.Is(err, context.DeadlineExceeded):
		n := c.names()
		return down(backend.StatusTimeout, c.cloudWatch()+" did not answer in time: narrow the time range or simplify the query, "+
			"raise "+n.Timeout+", and check network access from "+n.Machine)
	case errors.Is(err, context.Canceled):
		return down(backend.StatusTimeout, "the request to CloudWatch was canceled")
	}
	if msg, ok := network(err, c); ok {
		return down(backend.StatusBadGateway, msg)
	}
	if backend.IsDownstreamError(err) {
		return down(backend.StatusBadRequest, err.Error())
	}
	return Problem{Status: backend.StatusInternal, Source: backend.ErrorSourcePlugin, Message: err.Error()}
}

// awsStatus is the status for a failed alarm or inventory call (pkg/awsapi), whose
// message carries its own fix.
func awsStatus(e *awsapi.Error) backend.Status {
	switch {
	case e.Throttled():
		return backend.StatusTooManyRequests
	case e.AuthFailed():
		return backend.StatusUnauthorized
	case e.Status/100 == 4:
		return backend.StatusBadRequest
	}
	return backend.StatusBadGateway // a redirect, an unreadable or too large answer, or AWS failing
}

// withHint puts the fix first and the facts after it.
func withHint(hint string, err error) string {
	if hint == "" {
		return err.Error()
	}
	return hint + " (" + err.Error() + ")"
}

// network explains transport failures. TLS failures get their cause in words: Go's raw
// text ("first record does not look like a TLS handshake") does not say what to fix.
func network(err error, c Context) (string, bool) {
	var (
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalid    x509.CertificateInvalidError
		verifyErr  *tls.CertificateVerificationError
		recordErr  tls.RecordHeaderError
		dnsErr     *net.DNSError
		opErr      *net.OpError
		n          = c.names()
		reachHint  = "check " + n.Endpoint + ", DNS, proxy and network access from " + n.Machine
		cloudWatch = c.cloudWatch()
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid), errors.As(err, &verifyErr):
		return capital(n.Machine) + " does not trust the TLS certificate of " + cloudWatch + ": check " + n.Endpoint + "; " +
			"behind a TLS-inspecting proxy, add its CA to the trust store of " + n.Machine, true
	case errors.As(err, &recordErr), errors.Is(err, http.ErrSchemeMismatch):
		return cloudWatch + " did not answer with TLS: the endpoint is https but the port speaks plain http; " +
			"use https://monitoring.<region>.amazonaws.com, or http:// only for a local emulator", true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "The connection to " + cloudWatch + " closed before an answer arrived: try again, and if it persists " + reachHint, true
	case errors.As(err, &dnsErr), errors.As(err, &opErr):
		return fmt.Sprintf("Cannot reach %s (%v): %s", cloudWatch, err, reachHint), true
	}
	return "", false
}

// hint is the fix for a refusal, by its cause.
func hint(e *promclient.APIError, c Context) string {
	n := c.names()
	switch e.Cause {
	case promclient.CauseThrottledRate:
		return "CloudWatch's per-account request rate was exceeded (300 queries and 10 discovery calls per second): " + n.Rate
	case promclient.CauseThrottledConcurrency:
		return "Too many concurrent requests for this AWS account (CloudWatch allows 30 queries and 30 discovery calls at once): " + n.Concurrency
	case promclient.CauseWrongRegion:
		return fmt.Sprintf("Wrong region: requests are signed for %q but %s belongs to another region. "+
			"Set %s to the region the endpoint serves (CloudWatch's is in its host, monitoring.<region>.amazonaws.com)", c.Region, c.cloudWatch(), n.Region)
	case promclient.CauseWrongService:
		return fmt.Sprintf("Wrong service scope: the plugin signs for service %q, which %s does not accept. "+
			"Point the endpoint at CloudWatch (https://monitoring.<region>.amazonaws.com), not an Amazon Managed Prometheus workspace or another service",
			awsauth.SigningService, c.cloudWatch())
	case promclient.CauseClockSkew:
		return "Clock skew: the clock of " + n.Machine + " is more than 5 minutes away from AWS time, so signatures are rejected. " +
			"Synchronise it (NTP)"
	case promclient.CauseSignatureMismatch:
		return "The signature does not match: the secret key does not belong to the access key (check for stray whitespace when pasting), " +
			"or a proxy altered the request"
	case promclient.CauseUnknownCredentials:
		return "AWS does not recognise these credentials: check " + n.Credentials + ", " +
			"and that a session token, if used, has not expired"
	case promclient.CauseAccessDenied:
		action := "cloudwatch:GetMetricData and cloudwatch:ListMetrics"
		if c.Action != "" {
			action = c.Action
		}
		return "Missing permission: the AWS identity may not call " + action + ". Grant cloudwatch:GetMetricData and " +
			"cloudwatch:ListMetrics (Resource \"*\") to " + n.Identity
	case promclient.CauseRedirect:
		return c.cloudWatch() + " redirected instead of answering: set the endpoint to https://monitoring.<region>.amazonaws.com"
	case promclient.CauseNotFound:
		return c.cloudWatch() + " does not serve this API path: check that the endpoint is CloudWatch (https://monitoring.<region>.amazonaws.com)"
	}
	return ""
}

// capital is s with its first letter upper case, to start a sentence.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
