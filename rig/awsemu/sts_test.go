package awsemu_test

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
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// stsClient is the SDK's STS client pointed at the stack with the given keys, one attempt.
func stsClient(st *stack.Stack, accessKey, secretKey string) *sts.Client {
	return sts.NewFromConfig(aws.Config{
		Region:           st.Region,
		Credentials:      credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
		RetryMaxAttempts: 1,
	}, func(o *sts.Options) { o.BaseEndpoint = aws.String(st.URL) })
}

// TestGetCallerIdentity: the SDK's STS client learns the stack's account; bad keys, a
// signature for another service and a denied action get STS's error codes.
func TestGetCallerIdentity(t *testing.T) {
	st := start(t, stack.Options{History: 10 * time.Minute, Deny: []string{"sts:GetCallerIdentity"}})
	open := start(t, stack.Options{History: 10 * time.Minute})
	cases := []struct {
		name   string
		st     *stack.Stack
		client func(*stack.Stack) *sts.Client
		opts   []func(*sts.Options)
		code   string // "" for success
		msg    string
	}{
		{"the stack's keys", open, func(st *stack.Stack) *sts.Client { return stsClient(st, st.AccessKey, st.SecretKey) }, nil, "", ""},
		{"wrong secret", open, func(st *stack.Stack) *sts.Client { return stsClient(st, st.AccessKey, "wrong") }, nil, "SignatureDoesNotMatch", "signature"},
		{"unknown key", open, func(st *stack.Stack) *sts.Client { return stsClient(st, "AKIAUNKNOWN000000000", st.SecretKey) }, nil, "InvalidClientTokenId", "security token"},
		{"signed for monitoring", open, func(st *stack.Stack) *sts.Client { return stsClient(st, st.AccessKey, st.SecretKey) },
			[]func(*sts.Options){sts.WithSigV4SigningName(awsauth.SigningService)}, "SignatureDoesNotMatch", "'sts'"},
		{"denied", st, func(st *stack.Stack) *sts.Client { return stsClient(st, st.AccessKey, st.SecretKey) }, nil, "AccessDenied", "sts:GetCallerIdentity"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.client(tc.st).GetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{}, tc.opts...)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				acct := tc.st.Fleet.Account
				if aws.ToString(out.Account) != acct || aws.ToString(out.Arn) != "arn:aws:iam::"+acct+":user/emulator" || !strings.Contains(aws.ToString(out.UserId), acct) {
					t.Errorf("identity %s %s %s, want account %s", aws.ToString(out.Account), aws.ToString(out.Arn), aws.ToString(out.UserId), acct)
				}
				return
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.code || !strings.Contains(apiErr.ErrorMessage(), tc.msg) {
				t.Errorf("err %v, want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
}

// TestSTSQueryErrors: a Query call the emulator does not serve is refused in STS's XML,
// naming what it serves; a PromQL form POST is not taken for STS.
func TestSTSQueryErrors(t *testing.T) {
	st := start(t, stack.Options{History: 10 * time.Minute})
	cases := []struct {
		path, form string
		status     int
		want       string
	}{
		{"/", "Action=AssumeRole&Version=2011-06-15", 400, "<Code>InvalidAction</Code>"},
		{"/", "Action=GetCallerIdentity&Version=2010-01-01", 400, "<Code>InvalidAction</Code>"},
		{"/", "Version=2011-06-15", 400, "<Code>MissingAction</Code>"},
		{"/", "Action=GetCallerIdentity&Version=2011-06-15", 200, "<Account>" + st.Fleet.Account + "</Account>"},
		{"/api/v1/query", "query=1%2B1", 200, `"status":"success"`},
	}
	for _, tc := range cases {
		service := "sts"
		if tc.path != "/" {
			service = awsauth.SigningService
		}
		c := &http.Client{Transport: awsauth.NewSigner(http.DefaultTransport, credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), st.Region, service, nil)}
		resp, err := c.Post(st.URL+tc.path, "application/x-www-form-urlencoded", strings.NewReader(tc.form))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("POST %s %s: %d %s, want %d containing %s", tc.path, tc.form, resp.StatusCode, body, tc.status, tc.want)
		}
	}
}

// TestPluginLearnsTheAccount: the plugin's STS client, configured as a data source on the
// stack (the stack's URL as its endpoint), learns the stack's account; with the call denied
// its error names the fix.
func TestPluginLearnsTheAccount(t *testing.T) {
	for _, deny := range [][]string{nil, {"sts:GetCallerIdentity"}} {
		st := start(t, stack.Options{History: 10 * time.Minute, Deny: deny})
		s := awsauth.Settings{AuthType: awsauth.AuthKeys, AccessKey: awsauth.Secret(st.AccessKey), SecretKey: awsauth.Secret(st.SecretKey), Region: st.Region, Endpoint: st.URL}
		ep, err := awsauth.ResolveEndpoint(s)
		if err != nil {
			t.Fatal(err)
		}
		creds, err := awsauth.NewCredentialsProvider(context.Background(), s, awsauth.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		account, arn, err := awsapi.NewIdentity(creds, ep, nil).CallerIdentity(context.Background())
		if deny == nil {
			if err != nil || account != st.Fleet.Account || !strings.HasPrefix(arn, "arn:aws:iam::"+st.Fleet.Account+":") {
				t.Errorf("got %q %q %v, want the stack's account %s", account, arn, err, st.Fleet.Account)
			}
			continue
		}
		var ie *awsapi.IdentityError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), "allow the call there") {
			t.Errorf("denied: %v, want an IdentityError naming the fix", err)
		}
	}
}
