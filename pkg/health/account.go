package health

import (
	"github.com/aws/aws-sdk-go-v2/aws/arn"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
)

// AccountOf is the account id an ARN carries ("" for no ARN or one without an account).
// Alarm, endpoint and inference component ARNs all carry the account that owns them.
func AccountOf(s string) string {
	if !arn.IsARN(s) {
		return ""
	}
	a, err := arn.Parse(s)
	if err != nil {
		return ""
	}
	return a.AccountID
}

// componentAccount is an inference component's account: its ARN's, else its endpoint's
// (an IC lives in its endpoint's account).
func componentAccount(c awsapi.Component, endpointAccount string) string {
	if a := AccountOf(c.ARN); a != "" {
		return a
	}
	return endpointAccount
}

// named is a name within an account, the key of names that are unique per account and region.
type named struct{ account, name string }
