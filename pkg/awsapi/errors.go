package awsapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// IAM actions of the calls, which also name the operations in messages.
const (
	ActionDescribeAlarms             = "cloudwatch:DescribeAlarms"
	ActionDescribeAlarmHistory       = "cloudwatch:DescribeAlarmHistory"
	ActionDescribeAlarmContributors  = "cloudwatch:DescribeAlarmContributors"
	ActionListEndpoints              = "sagemaker:ListEndpoints"
	ActionDescribeEndpoint           = "sagemaker:DescribeEndpoint"
	ActionDescribeEndpointConfig     = "sagemaker:DescribeEndpointConfig"
	ActionListInferenceComponents    = "sagemaker:ListInferenceComponents"
	ActionDescribeInferenceComponent = "sagemaker:DescribeInferenceComponent"
	ActionListTags                   = "sagemaker:ListTags"
	ActionGetProducts                = "pricing:GetProducts"
	ActionDescribeScalableTargets    = "application-autoscaling:DescribeScalableTargets"
	ActionDescribeScalingPolicies    = "application-autoscaling:DescribeScalingPolicies"
)

// Error is a failed AWS call that got an answer (any HTTP status, or a 2xx that could not
// be read) other than a missing permission. It is a downstream error; pkg/fault turns its
// Status into the user's status.
type Error struct {
	Action    string // IAM action of the call, e.g. sagemaker:ListEndpoints
	Status    int    // HTTP status of the last attempt
	Code      string // AWS error code, e.g. ThrottlingException; "" when the answer had none
	Message   string // AWS's words, or what was wrong with the answer
	RequestID string
	Err       error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed: HTTP %d", e.Action, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + strings.TrimRight(e.Message, "."))
	}
	if h := e.hint(); h != "" {
		b.WriteString("; " + h)
	}
	if e.RequestID != "" {
		b.WriteString(" (request id " + e.RequestID + ")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Throttled reports whether AWS refused the call for its rate (after the retries).
func (e *Error) Throttled() bool {
	_, throttle := retry.DefaultThrottleErrorCodes[e.Code]
	return throttle || e.Status == http.StatusTooManyRequests
}

// AuthFailed reports whether AWS refused the signature or the credentials themselves.
func (e *Error) AuthFailed() bool { return authFailures[e.Code] }

// hint is the fix, by what went wrong.
func (e *Error) hint() string {
	var tooLarge *tooLargeError
	switch {
	case errors.As(e.Err, &tooLarge):
		return narrowHint(e.Action)
	case e.Throttled():
		return "AWS throttled the call, also on retry: refresh dashboards less often (answers are cached briefly) or ask AWS for a higher API rate"
	case e.AuthFailed():
		return "AWS refused the credentials or the signature: check the access and secret key (or profile / role), that a session token has not expired, " +
			"the clock of the machine that signs the requests, and the region"
	case e.Status == http.StatusForbidden:
		return "the request was refused: check the credentials, the default region and that the endpoint is AWS (or the emulator)"
	case e.Status/100 == 3:
		return "the endpoint redirected instead of answering and redirects are not followed: check the endpoint URL (jsonData.endpoint)"
	case e.Status/100 == 2:
		return "check that the endpoint is AWS (or the emulator) and that no proxy rewrites answers"
	case e.Status/100 == 5:
		return "AWS failed, also on retry: try again later"
	}
	return ""
}

// narrowHint is the fix for an answer or a listing beyond the client's bounds.
func narrowHint(action string) string {
	if action == ActionGetProducts {
		// No filter narrows SageMaker's hosting prices, a few hundred products.
		return "SageMaker's price list is far smaller, so check that the endpoint is AWS (or the emulator), or list the prices in the price table (jsonData.priceTable)"
	}
	if action == ActionLookupEvents {
		return "choose a shorter time range: the range holds more change events than the plugin pages through"
	}
	return "narrow the request (an alarm name prefix or names, a shorter time range)"
}

// authFailures are the codes of a refused signature or unknown credentials; they come
// with 403 too but are not missing permissions.
var authFailures = map[string]bool{
	"IncompleteSignature": true, "IncompleteSignatureException": true, "InvalidSignatureException": true,
	"SignatureDoesNotMatch": true, "MissingAuthenticationToken": true, "MissingAuthenticationTokenException": true,
	"UnrecognizedClientException": true, "InvalidClientTokenId": true, "ExpiredToken": true,
	"ExpiredTokenException": true, "RequestExpired": true,
}

// permissionCodes are how AWS services say the identity lacks the IAM action.
var permissionCodes = map[string]bool{
	"AccessDenied": true, "AccessDeniedException": true, "UnauthorizedOperation": true,
	"UnauthorizedException": true, "NotAuthorized": true, "AuthorizationError": true,
}

// tooLargeError is what the body limit reads out once an answer passes it.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the answer is larger than %d KiB, the most the plugin reads for one call", e.limit>>10)
}

// classify turns an SDK error of the call named by action into *PermissionError or
// *Error, or, when no answer to the call arrived (network, timeout, credentials), the error itself
// with the action named; all downstream, and fault.Explain reads each.
func classify(action string, err error) error {
	if err == nil {
		return nil
	}
	var (
		respErr  *awshttp.ResponseError
		apiErr   smithy.APIError
		deserErr *smithy.DeserializationError
		tooLarge *tooLargeError
	)
	// Getting the credentials failed: any answer in the chain is STS's (AssumeRole refused,
	// say), not the call's, and says nothing about the call's IAM action.
	var credsErr *awsauth.CredentialsError
	if errors.As(err, &credsErr) || !errors.As(err, &respErr) || respErr.Response == nil {
		return backend.DownstreamError(fmt.Errorf("%s: %w", action, err))
	}
	e := &Error{Action: action, Status: respErr.Response.StatusCode, RequestID: respErr.RequestID, Err: err}
	switch {
	case errors.As(err, &tooLarge):
		e.Message = tooLarge.Error()
	case e.Status/100 == 3:
		e.Message = "redirect"
		if u, perr := url.Parse(respErr.Response.Header.Get("Location")); perr == nil && u.Host != "" {
			e.Message += " to " + u.Scheme + "://" + u.Host
		}
	case errors.As(err, &apiErr):
		if c := apiErr.ErrorCode(); c != "UnknownError" {
			e.Code = c
		}
		e.Message = apiErr.ErrorMessage()
		if e.Message == "UnknownError" {
			e.Message = ""
		}
	case errors.As(err, &deserErr):
		e.Message = "the answer could not be read: " + deserErr.Err.Error()
	default:
		e.Message = err.Error()
	}
	// A 403 without a code is a refusal too, unless it has a body that could not be read:
	// a proxy's page or a foreign error format says nothing about IAM.
	unreadable := errors.As(err, &deserErr) && len(deserErr.Snapshot) > 0
	if permissionCodes[e.Code] || (e.Status == http.StatusForbidden && e.Code == "" && !unreadable) {
		return backend.DownstreamError(&PermissionError{Action: action, Err: e})
	}
	return backend.DownstreamError(e)
}

// asError finds the *Error in err.
func asError(err error) (*Error, bool) {
	var e *Error
	return e, errors.As(err, &e)
}
