package awsapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// ActionGetCallerIdentity is STS's call that names the credentials' identity.
const ActionGetCallerIdentity = "sts:GetCallerIdentity"

// Identity names whom a data source's credentials sign as: the account is the one whose
// CloudWatch limits its calls spend, with every replica and data source of that account.
type Identity interface {
	// CallerIdentity is the credentials' account id and ARN (sts:GetCallerIdentity).
	CallerIdentity(ctx context.Context) (account, arn string, err error)
}

// NewIdentity is the STS client of a data source's region on its shared credentials: at
// awsauth.STSEndpoint(ep) (the region's STS host, or the custom endpoint, which the emulator
// serves), the only host it signs for.
func NewIdentity(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, opts ...Option) Identity {
	return newIdentity(creds, ep, seen, optionsOf(opts))
}

type identity struct {
	*client
	sts  *sts.Client
	host string // where STS is asked, for messages
}

func newIdentity(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, o options) *identity {
	c, config := newBase(creds, ep, seen, o)
	sep := awsauth.STSEndpoint(ep)
	return &identity{client: c, sts: sts.NewFromConfig(config(sep)), host: sep.URL.Host}
}

// accountID is the shape of an AWS account id.
var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// CallerIdentity implements Identity.
func (c *identity) CallerIdentity(ctx context.Context) (string, string, error) {
	out, err := call(ctx, c.client, ActionGetCallerIdentity, func(ctx context.Context) (*sts.GetCallerIdentityOutput, error) {
		return c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	})
	if err != nil {
		// No IAM policy can deny GetCallerIdentity: a refusal is no missing permission, and
		// PermissionError's fix (add it to the policy) would mislead.
		var perm *PermissionError
		if errors.As(err, &perm) {
			err = backend.DownstreamError(perm.Err)
		}
		return "", "", &IdentityError{Host: c.host, Region: c.region, Err: err}
	}
	account := aws.ToString(out.Account)
	if !accountID.MatchString(account) {
		return "", "", &IdentityError{Host: c.host, Region: c.region, Err: backend.DownstreamError(&Error{Action: ActionGetCallerIdentity,
			Status: http.StatusOK, Message: fmt.Sprintf("the answer's account %q is not a 12-digit account id", account)})}
	}
	return account, aws.ToString(out.Arn), nil
}

// IdentityError is a failed sts:GetCallerIdentity: the account, and so the account's shared
// CloudWatch budget, is not known. It wraps the call's error (*Error, or the transport's
// when STS did not answer) and names the fix.
type IdentityError struct {
	Host   string // where STS was asked
	Region string
	Err    error
}

func (e *IdentityError) Error() string {
	msg := fmt.Sprintf("cannot learn the AWS account of the data source's credentials from STS at %s: %v", e.Host, e.Err)
	if h := e.hint(); h != "" {
		msg += "; " + h
	}
	return msg
}

func (e *IdentityError) Unwrap() error { return e.Err }

// hint is the fix, by what went wrong, where the wrapped error does not name one already:
// *Error does for credentials, throttling and AWS failing, *awsauth.CredentialsError always.
func (e *IdentityError) hint() string {
	var (
		creds   *awsauth.CredentialsError
		sendErr *smithyhttp.RequestSendError
	)
	ae, answered := asError(e.Err)
	switch {
	case errors.As(e.Err, &sendErr): // the SDK words it as a response of status 0
		return e.unreachable()
	case answered && permissionCodes[ae.Code]:
		return "IAM policies cannot deny sts:GetCallerIdentity, so a VPC endpoint policy for STS or a proxy refused it: allow the call there"
	case answered && ae.Code == "RegionDisabledException":
		return fmt.Sprintf("activate STS in %s (IAM console, Account settings, Security Token Service endpoints)", e.Region)
	case answered && ae.hint() == "":
		return "check that the endpoint serves STS (AWS and the emulator do)"
	case answered, errors.As(e.Err, &creds):
		return ""
	}
	return e.unreachable()
}

func (e *IdentityError) unreachable() string {
	return fmt.Sprintf("STS did not answer: let the Grafana server reach %s (firewall, proxy), or set the endpoint (jsonData.endpoint) to one that serves STS, such as the emulator", e.Host)
}
