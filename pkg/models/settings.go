// Package models turns what Grafana hands the plugin into validated Go values: the
// datasource settings (jsonData + secureJsonData) and the Prometheus-style query model.
package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/interval"
)

// AuthType is the jsonData authType value; the names match @grafana/aws-sdk's
// ConnectionConfig so the frontend can reuse it.
type AuthType string

const (
	AuthDefault     AuthType = "default"
	AuthKeys        AuthType = "keys"
	AuthCredentials AuthType = "credentials"
	AuthEC2IAMRole  AuthType = "ec2_iam_role"
)

// AuthTypes lists every accepted authType, in the order error messages show them.
var AuthTypes = []AuthType{AuthDefault, AuthKeys, AuthCredentials, AuthEC2IAMRole}

// CloudWatch's account-wide limits (300 query TPS, 30 concurrent queries). Our own
// traffic shaping must stay below them; the defaults leave room for other clients.
const (
	MaxConcurrencyLimit     = 30
	RequestsPerSecondLimit  = 300
	DefaultMaxConcurrency   = 10
	DefaultRequestsPerSec   = 50
	DefaultQueryTimeout     = 60 * time.Second
	DefaultHTTPMethod       = http.MethodPost
	maxQueryTimeoutAccepted = 10 * time.Minute
)

// Settings is one datasource instance's configuration after validation.
type Settings struct {
	// URL is the datasource URL; the endpoint when jsonData endpoint is empty.
	URL string `json:"url,omitempty"`

	AuthType      AuthType `json:"authType"`
	DefaultRegion string   `json:"defaultRegion,omitempty"`
	Profile       string   `json:"profile,omitempty"`
	AssumeRoleARN string   `json:"assumeRoleArn,omitempty"`
	ExternalID    string   `json:"externalId,omitempty"`
	Endpoint      string   `json:"endpoint,omitempty"`

	// TimeInterval is the datasource's min step (Grafana's "Scrape interval"); 0 if unset.
	TimeInterval time.Duration `json:"timeInterval,omitempty"`
	QueryTimeout time.Duration `json:"queryTimeout"`
	HTTPMethod   string        `json:"httpMethod"`

	MaxConcurrency    int     `json:"maxConcurrency"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`

	AccessKey    Secret `json:"accessKey,omitempty"`
	SecretKey    Secret `json:"secretKey,omitempty"`
	SessionToken Secret `json:"sessionToken,omitempty"`
}

// jsonData mirrors the stored jsonData. Numbers and durations arrive in whatever shape
// provisioning files and the config editor produce, so they are decoded loosely first.
type jsonData struct {
	AuthType          string          `json:"authType"`
	DefaultRegion     string          `json:"defaultRegion"`
	Profile           string          `json:"profile"`
	AssumeRoleARN     string          `json:"assumeRoleArn"`
	ExternalID        string          `json:"externalId"`
	Endpoint          string          `json:"endpoint"`
	TimeInterval      string          `json:"timeInterval"`
	QueryTimeout      string          `json:"queryTimeout"`
	HTTPMethod        string          `json:"httpMethod"`
	MaxConcurrency    json.RawMessage `json:"maxConcurrency"`
	RequestsPerSecond json.RawMessage `json:"requestsPerSecond"`
}

// LoadSettings reads and validates an instance's settings. Every error names the
// offending key and how to fix it; none contains a secret.
func LoadSettings(s backend.DataSourceInstanceSettings) (*Settings, error) {
	var jd jsonData
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &jd); err != nil {
			return nil, fmt.Errorf("datasource jsonData is not valid JSON or has a value of the wrong type (%s): fix the provisioning file or re-save the datasource", jsonTypeProblem(err))
		}
	}
	out := &Settings{
		URL:           strings.TrimSpace(s.URL),
		AuthType:      AuthType(strings.TrimSpace(jd.AuthType)),
		DefaultRegion: strings.TrimSpace(jd.DefaultRegion),
		Profile:       strings.TrimSpace(jd.Profile),
		AssumeRoleARN: strings.TrimSpace(jd.AssumeRoleARN),
		ExternalID:    strings.TrimSpace(jd.ExternalID),
		Endpoint:      strings.TrimSpace(jd.Endpoint),
		HTTPMethod:    strings.ToUpper(strings.TrimSpace(jd.HTTPMethod)),
		AccessKey:     Secret(strings.TrimSpace(s.DecryptedSecureJSONData["accessKey"])),
		SecretKey:     Secret(strings.TrimSpace(s.DecryptedSecureJSONData["secretKey"])),
		SessionToken:  Secret(strings.TrimSpace(s.DecryptedSecureJSONData["sessionToken"])),
	}
	var errs []error
	if out.AuthType == "" {
		out.AuthType = AuthDefault
	}
	if !validAuthType(out.AuthType) {
		errs = append(errs, fmt.Errorf("jsonData.authType %q is not supported: use one of %s", out.AuthType, joinAuthTypes()))
	}
	if out.AuthType == AuthKeys {
		if !out.AccessKey.IsSet() {
			errs = append(errs, errors.New("secureJsonData.accessKey is empty but authType is keys: enter the access key ID or pick another authentication provider"))
		}
		if !out.SecretKey.IsSet() {
			errs = append(errs, errors.New("secureJsonData.secretKey is empty but authType is keys: enter the secret access key or pick another authentication provider"))
		}
	}
	for _, sec := range []struct {
		key string
		v   Secret
	}{{"accessKey", out.AccessKey}, {"secretKey", out.SecretKey}, {"sessionToken", out.SessionToken}} {
		if strings.ContainsFunc(sec.v.Reveal(), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			errs = append(errs, fmt.Errorf("secureJsonData.%s contains a line break or another control character: paste it again as one line", sec.key))
		}
	}
	if out.HTTPMethod == "" {
		out.HTTPMethod = DefaultHTTPMethod
	}
	if out.HTTPMethod != http.MethodPost && out.HTTPMethod != http.MethodGet {
		errs = append(errs, fmt.Errorf("jsonData.httpMethod %q is not supported: use POST (recommended) or GET", jd.HTTPMethod))
	}
	if jd.TimeInterval != "" {
		d, err := interval.ParseDuration(jd.TimeInterval)
		if err != nil {
			errs = append(errs, fmt.Errorf("jsonData.timeInterval: %w", err))
		}
		out.TimeInterval = d
	}
	out.QueryTimeout = DefaultQueryTimeout
	if jd.QueryTimeout != "" {
		d, err := interval.ParseDuration(jd.QueryTimeout)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("jsonData.queryTimeout: %w", err))
		case d < time.Second || d > maxQueryTimeoutAccepted:
			errs = append(errs, fmt.Errorf("jsonData.queryTimeout %q is out of range: use a value between 1s and %s, such as 60s", jd.QueryTimeout, interval.FormatDuration(maxQueryTimeoutAccepted)))
		default:
			out.QueryTimeout = d
		}
	}
	var err error
	if out.MaxConcurrency, err = intSetting("maxConcurrency", jd.MaxConcurrency, DefaultMaxConcurrency, MaxConcurrencyLimit); err != nil {
		errs = append(errs, err)
	}
	if out.RequestsPerSecond, err = rateSetting(jd.RequestsPerSecond); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func validAuthType(a AuthType) bool {
	for _, t := range AuthTypes {
		if a == t {
			return true
		}
	}
	return false
}

func joinAuthTypes() string {
	names := make([]string, len(AuthTypes))
	for i, t := range AuthTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// number reads a JSON number or a numeric string (the config editor stores some numbers
// as strings). ok is false when raw is absent or null.
func number(key string, raw json.RawMessage) (v float64, ok bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return 0, false, nil
		}
		raw = json.RawMessage(strings.TrimSpace(s))
	}
	if err := json.Unmarshal(raw, &v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("jsonData.%s is not a number: enter a plain number", key)
	}
	return v, true, nil
}

func intSetting(key string, raw json.RawMessage, def, limit int) (int, error) {
	v, ok, err := number(key, raw)
	if err != nil || !ok {
		return def, err
	}
	if v != math.Trunc(v) || v < 1 || v > float64(limit) {
		return def, fmt.Errorf("jsonData.%s %v is out of range: use a whole number from 1 to %d (CloudWatch allows %d concurrent queries per account)", key, v, limit, limit)
	}
	return int(v), nil
}

func rateSetting(raw json.RawMessage) (float64, error) {
	v, ok, err := number("requestsPerSecond", raw)
	if err != nil || !ok {
		return DefaultRequestsPerSec, err
	}
	if v <= 0 || v > RequestsPerSecondLimit {
		return DefaultRequestsPerSec, fmt.Errorf("jsonData.requestsPerSecond %v is out of range: use a number above 0 and at most %d (CloudWatch allows %d query requests per second per account)", v, RequestsPerSecondLimit, RequestsPerSecondLimit)
	}
	return v, nil
}

// jsonTypeProblem describes a decode error without echoing the input, which could hold
// anything the user pasted.
func jsonTypeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("key %q must be a %s, not a %s", te.Field, te.Type, te.Value)
	}
	return "malformed JSON"
}

// String summarises the settings for logs. Secrets only say whether they are set.
func (s *Settings) String() string {
	return fmt.Sprintf("Settings{authType=%s region=%q endpoint=%q url=%q profile=%q assumeRoleArn=%q externalId=%q timeInterval=%s queryTimeout=%s httpMethod=%s maxConcurrency=%d requestsPerSecond=%g accessKey=%s secretKey=%s sessionToken=%s}",
		s.AuthType, s.DefaultRegion, redactURL(s.Endpoint), redactURL(s.URL), s.Profile, s.AssumeRoleARN, s.ExternalID,
		interval.FormatDuration(s.TimeInterval), interval.FormatDuration(s.QueryTimeout), s.HTTPMethod,
		s.MaxConcurrency, s.RequestsPerSecond, presence(s.AccessKey), presence(s.SecretKey), presence(s.SessionToken))
}

// redactURL hides a password embedded in a URL (https://user:pass@host).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

func presence(s Secret) string {
	if s.IsSet() {
		return "set"
	}
	return "unset"
}
