// Package awsauth turns the datasource's AWS settings into a credentials
// provider, applies Grafana's [aws] restrictions, decides which endpoint
// requests may be signed for, and signs them with SigV4.
package awsauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Auth types, spelled as @grafana/aws-sdk's ConnectionConfig stores them in jsonData.authType.
const (
	AuthDefault     = "default"
	AuthKeys        = "keys"
	AuthCredentials = "credentials"
	AuthEC2IAMRole  = "ec2_iam_role"
)

// AuthTypes lists every accepted authType, in the order messages name them.
var AuthTypes = []string{AuthDefault, AuthKeys, AuthCredentials, AuthEC2IAMRole}

// Settings is the AWS part of a datasource's settings (authentication, region, endpoint).
// pkg/models holds it as is inside the datasource's settings; the diagnose CLI fills it
// from flags.
type Settings struct {
	AuthType      string // jsonData.authType; empty means "default"
	Region        string // jsonData.defaultRegion
	Profile       string // jsonData.profile (authType "credentials")
	AssumeRoleARN string // jsonData.assumeRoleArn
	ExternalID    string // jsonData.externalId
	Endpoint      string // jsonData.endpoint
	DatasourceURL string // the datasource's URL field
	// RegionEndpoints is jsonData.regionEndpoints: the endpoint of each region named (see
	// ResolveRegionEndpoint).
	RegionEndpoints map[string]string

	AccessKey    Secret // secureJsonData.accessKey
	SecretKey    Secret // secureJsonData.secretKey
	SessionToken Secret // secureJsonData.sessionToken
}

// effectiveAuthType maps the unset value to the default chain, as Grafana does.
func (s Settings) effectiveAuthType() string {
	if s.AuthType == "" {
		return AuthDefault
	}
	return s.AuthType
}

// Validate checks what can be checked without calling AWS: a known auth type, both keys
// for "keys", no control characters in secrets (net/http would refuse them without naming
// the setting) and an IAM role ARN's shape. Errors are *SettingError.
func (s Settings) Validate() error {
	var errs []error
	at := s.effectiveAuthType()
	if !slices.Contains(AuthTypes, at) {
		errs = append(errs, settingErrorf([]Setting{SetAuthType}, "%[1]s %[2]q is not supported: use one of %[3]s", at, strings.Join(AuthTypes, ", ")))
	}
	if at == AuthKeys {
		if !s.AccessKey.IsSet() {
			errs = append(errs, settingErrorf([]Setting{SetAccessKey}, "%[1]s is empty but the authentication type is keys: enter the access key ID or pick another authentication type"))
		}
		if !s.SecretKey.IsSet() {
			errs = append(errs, settingErrorf([]Setting{SetSecretKey}, "%[1]s is empty but the authentication type is keys: enter the secret access key or pick another authentication type"))
		}
	}
	for _, sec := range []struct {
		setting Setting
		v       Secret
	}{{SetAccessKey, s.AccessKey}, {SetSecretKey, s.SecretKey}, {SetSessionToken, s.SessionToken}} {
		if strings.ContainsFunc(sec.v.Reveal(), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			errs = append(errs, settingErrorf([]Setting{sec.setting}, "%[1]s contains a line break or another control character: paste it again as one line"))
		}
	}
	if s.AssumeRoleARN != "" && !roleARN.MatchString(s.AssumeRoleARN) {
		errs = append(errs, settingErrorf([]Setting{SetAssumeRoleARN}, "%[1]s %[2]q is not an IAM role ARN; use the form arn:aws:iam::<12-digit account>:role/<name>", s.AssumeRoleARN))
	}
	return errors.Join(errs...)
}

// redacted is Settings as it may be printed: secrets reduced to whether they are set.
type redacted struct {
	AuthType        string            `json:"authType"`
	Region          string            `json:"defaultRegion,omitempty"`
	Profile         string            `json:"profile,omitempty"`
	AssumeRoleARN   string            `json:"assumeRoleArn,omitempty"`
	ExternalID      string            `json:"externalId,omitempty"`
	Endpoint        string            `json:"endpoint,omitempty"`
	DatasourceURL   string            `json:"url,omitempty"`
	RegionEndpoints map[string]string `json:"regionEndpoints,omitempty"`
	AccessKeySet    bool              `json:"accessKeySet"`
	SecretKeySet    bool              `json:"secretKeySet"`
	SessionTokenSet bool              `json:"sessionTokenSet"`
}

func (s Settings) redacted() redacted {
	return redacted{
		AuthType: s.effectiveAuthType(), Region: s.Region, Profile: s.Profile, AssumeRoleARN: s.AssumeRoleARN,
		ExternalID: s.ExternalID, Endpoint: redactURL(s.Endpoint), DatasourceURL: redactURL(s.DatasourceURL),
		RegionEndpoints: redactURLs(s.RegionEndpoints),
		AccessKeySet:    s.AccessKey.IsSet(), SecretKeySet: s.SecretKey.IsSet(), SessionTokenSet: s.SessionToken.IsSet(),
	}
}

// redactURL hides a password embedded in a URL (https://user:pass@host).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

func redactURLs(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = redactURL(v)
	}
	return out
}

// String never prints secrets, only whether they are set.
func (s Settings) String() string { return fmt.Sprintf("awsauth.Settings%+v", s.redacted()) }

// GoString keeps %#v as safe as %v.
func (s Settings) GoString() string { return s.String() }

// MarshalJSON never emits secrets, only whether they are set.
func (s Settings) MarshalJSON() ([]byte, error) { return json.Marshal(s.redacted()) }
