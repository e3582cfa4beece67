package awsapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// TestAssumeRoleRefusalIsNoMissingCloudWatchPermission: when STS refuses AssumeRole with
// AccessDenied (a 403 answer, but STS's, to the credentials lookup), the CloudWatch call that
// needed the credentials must not read as lacking cloudwatch:DescribeAlarms: Save & test would
// name an action whose grant changes nothing. It is a credentials error, naming the STS refusal.
func TestAssumeRoleRefusalIsNoMissingCloudWatchPermission(t *testing.T) {
	stsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code>` +
			`<Message>User: arn:aws:iam::123456789012:user/grafana is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::123456789012:role/Inferscope</Message>` +
			`</Error><RequestId>r-1</RequestId></ErrorResponse>`))
	}))
	defer stsSrv.Close()
	cwSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("CloudWatch was called without credentials")
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer cwSrv.Close()

	stsClient := sts.NewFromConfig(aws.Config{
		Region: testRegion, BaseEndpoint: aws.String(stsSrv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDBASE000000000001", "base-secret", ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	})
	provider := &sinkingCredentials{next: aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, "arn:aws:iam::123456789012:role/Inferscope"))}
	cw := cloudwatch.NewFromConfig(aws.Config{
		Region: testRegion, BaseEndpoint: aws.String(cwSrv.URL), Credentials: provider,
		Retryer: func() aws.Retryer { return aws.NopRetryer{} },
	})
	_, sdkErr := cw.DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{})
	if sdkErr == nil {
		t.Fatal("DescribeAlarms succeeded without credentials")
	}
	err := classify(ActionDescribeAlarms, sdkErr)
	var (
		ce     *awsauth.CredentialsError
		op     *smithy.OperationError
		apiErr smithy.APIError
	)
	switch {
	case IsPermission(err):
		t.Errorf("an STS refusal reads as a missing %s: %v", ActionDescribeAlarms, err)
	case !errors.As(err, &ce):
		t.Errorf("not a credentials error: %v", err)
	case !errors.As(ce, &op) || op.ServiceID != "STS" || op.OperationName != "AssumeRole" || !errors.As(op, &apiErr) || apiErr.ErrorCode() != "AccessDenied":
		t.Errorf("the credentials error should keep STS's AssumeRole refusal: %#v", ce.Err)
	case !strings.HasPrefix(err.Error(), ActionDescribeAlarms+": "):
		t.Errorf("the error should name the call: %v", err)
	}
	if !backend.IsDownstreamError(err) {
		t.Errorf("not a downstream error: %v", err)
	}
}

// TestPermissionErrorNamesTheFix: the message names the action and where to grant it.
func TestPermissionErrorNamesTheFix(t *testing.T) {
	err := &PermissionError{Action: ActionListEndpoints, Err: &Error{Action: ActionListEndpoints, Status: 403}}
	if msg := err.Error(); !strings.Contains(msg, "not allowed "+ActionListEndpoints+": add it to the IAM policy") {
		t.Errorf("message %q does not name %s and the fix", msg, ActionListEndpoints)
	}
}
