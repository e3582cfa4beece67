// Package awsauth turns the datasource's AWS settings into a credentials
// provider, applies Grafana's [aws] restrictions, and decides which endpoint
// requests may be signed for.
package awsauth

import (
	"encoding/json"
	"fmt"
)

// Auth types, spelled as @grafana/aws-sdk's ConnectionConfig stores them in jsonData.authType.
const (
	AuthDefault     = "default"
	AuthKeys        = "keys"
	AuthCredentials = "credentials"
	AuthEC2IAMRole  = "ec2_iam_role"
)

var authTypes = []string{AuthDefault, AuthKeys, AuthCredentials, AuthEC2IAMRole}

// Settings is the AWS part of a datasource's settings. The plugin maps its
// parsed jsonData/secureJsonData into it.
type Settings struct {
	AuthType      string // jsonData.authType; empty means "default"
	Region        string // jsonData.defaultRegion
	Profile       string // jsonData.profile (authType "credentials")
	AssumeRoleARN string // jsonData.assumeRoleArn
	ExternalID    string // jsonData.externalId
	Endpoint      string // jsonData.endpoint
	DatasourceURL string // the datasource's URL field

	AccessKey    string // secureJsonData.accessKey
	SecretKey    string // secureJsonData.secretKey
	SessionToken string // secureJsonData.sessionToken
}

// effectiveAuthType maps the unset value to the default chain, as Grafana does.
func (s Settings) effectiveAuthType() string {
	if s.AuthType == "" {
		return AuthDefault
	}
	return s.AuthType
}

// redacted is Settings as it may be printed: secrets reduced to whether they are set.
type redacted struct {
	AuthType        string `json:"authType"`
	Region          string `json:"defaultRegion,omitempty"`
	Profile         string `json:"profile,omitempty"`
	AssumeRoleARN   string `json:"assumeRoleArn,omitempty"`
	ExternalID      string `json:"externalId,omitempty"`
	Endpoint        string `json:"endpoint,omitempty"`
	DatasourceURL   string `json:"url,omitempty"`
	AccessKeySet    bool   `json:"accessKeySet"`
	SecretKeySet    bool   `json:"secretKeySet"`
	SessionTokenSet bool   `json:"sessionTokenSet"`
}

func (s Settings) redacted() redacted {
	return redacted{
		AuthType: s.effectiveAuthType(), Region: s.Region, Profile: s.Profile, AssumeRoleARN: s.AssumeRoleARN,
		ExternalID: s.ExternalID, Endpoint: s.Endpoint, DatasourceURL: s.DatasourceURL,
		AccessKeySet: s.AccessKey != "", SecretKeySet: s.SecretKey != "", SessionTokenSet: s.SessionToken != "",
	}
}

// String never prints secrets, only whether they are set.
func (s Settings) String() string { return fmt.Sprintf("awsauth.Settings%+v", s.redacted()) }

// GoString keeps %#v as safe as %v.
func (s Settings) GoString() string { return s.String() }

// MarshalJSON never emits secrets, only whether they are set.
func (s Settings) MarshalJSON() ([]byte, error) { return json.Marshal(s.redacted()) }
