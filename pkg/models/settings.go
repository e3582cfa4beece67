// Package models turns what Grafana hands the plugin into validated Go values: the
// datasource settings (jsonData + secureJsonData) and the Prometheus-style query model.
package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
)

const maxQueryTimeoutAccepted = 10 * time.Minute

// Settings is one datasource instance's configuration after validation.
type Settings struct {
	// Auth is the authentication, region and endpoint part, as pkg/awsauth reads it.
	Auth awsauth.Settings `json:"auth"`

	// TimeInterval is the datasource's min step (Grafana's "Scrape interval"); DefaultTimeInterval if unset.
	TimeInterval time.Duration `json:"timeInterval,omitempty"`
	QueryTimeout time.Duration `json:"queryTimeout"`
	HTTPMethod   string        `json:"httpMethod"`

	MaxConcurrency    int     `json:"maxConcurrency"`
	RequestsPerSecond float64 `json:"requestsPerSecond"`

	// AllowedRegions is jsonData.allowedRegions as configured (see Allowed for the effective set).
	AllowedRegions []string `json:"allowedRegions,omitempty"`

	Resources // results cache, price (resources.go)

	// PriceTable is jsonData.priceTable: hourly prices of instance types that override the
	// AWS Price List (prices.go); nil when none are configured.
	PriceTable []pricing.Price `json:"priceTable,omitempty"`

	// SharedStore is jsonData.sharedStore and its secrets: the store replicas share (results
	// cache, the account's budget). The zero value, as by default, is no store.
	SharedStore sharedstore.Settings `json:"sharedStore,omitzero"`
	// SharedStoreErr is what is wrong with jsonData.sharedStore (naming the setting and the
	// fix): the data source then runs without the store, as nothing a user sees may depend
	// on it, and Save & test and each query's stats say why.
	SharedStoreErr error `json:"-"`
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
	PriceTable        json.RawMessage `json:"priceTable"`
	resourcesJSON
	regionsJSON
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
		Auth: awsauth.Settings{
			DatasourceURL: strings.TrimSpace(s.URL),
			AuthType:      strings.TrimSpace(jd.AuthType),
			Region:        strings.TrimSpace(jd.DefaultRegion),
			Profile:       strings.TrimSpace(jd.Profile),
			AssumeRoleARN: strings.TrimSpace(jd.AssumeRoleARN),
			ExternalID:    strings.TrimSpace(jd.ExternalID),
			Endpoint:      strings.TrimSpace(jd.Endpoint),
			AccessKey:     awsauth.Secret(strings.TrimSpace(s.DecryptedSecureJSONData["accessKey"])),
			SecretKey:     awsauth.Secret(strings.TrimSpace(s.DecryptedSecureJSONData["secretKey"])),
			SessionToken:  awsauth.Secret(strings.TrimSpace(s.DecryptedSecureJSONData["sessionToken"])),
		},
		HTTPMethod: strings.ToUpper(strings.TrimSpace(jd.HTTPMethod)),
	}
	var errs []error
	if out.Auth.AuthType == "" {
		out.Auth.AuthType = awsauth.AuthDefault
	}
	if err := out.Auth.Validate(); err != nil {
		errs = append(errs, err)
	}
	if out.HTTPMethod == "" {
		out.HTTPMethod = DefaultHTTPMethod
	}
	if out.HTTPMethod != http.MethodPost && out.HTTPMethod != http.MethodGet {
		errs = append(errs, fmt.Errorf("jsonData.httpMethod %q is not supported: use POST (recommended) or GET", jd.HTTPMethod))
	}
	out.TimeInterval = DefaultTimeInterval
	if jd.TimeInterval != "" {
		// "0s" or "0" means no min step was chosen, as an empty field does: keeping
		// the default keeps rate() windows wider than CloudWatch's one-minute samples.
		d, err := ParseDuration(jd.TimeInterval)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("jsonData.timeInterval: %w", err))
		case d > 0:
			out.TimeInterval = d
		}
	}
	out.QueryTimeout = DefaultQueryTimeout
	if jd.QueryTimeout != "" {
		d, err := ParseDuration(jd.QueryTimeout)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("jsonData.queryTimeout: %w", err))
		case d < time.Second || d > maxQueryTimeoutAccepted:
			errs = append(errs, fmt.Errorf("jsonData.queryTimeout %q is out of range: use a value between 1s and %s, such as 60s", jd.QueryTimeout, FormatDuration(maxQueryTimeoutAccepted)))
		default:
			out.QueryTimeout = d
		}
	}
	var err error
	if out.MaxConcurrency, err = intSetting("maxConcurrency", jd.MaxConcurrency, DefaultMaxConcurrency, AccountConcurrency); err != nil {
		errs = append(errs, err)
	}
	if out.RequestsPerSecond, err = rateSetting(jd.RequestsPerSecond); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, out.Resources.load(jd.resourcesJSON)...)
	errs = append(errs, out.loadRegions(jd.regionsJSON)...)
	if out.PriceTable, err = loadPriceTable(jd.PriceTable); err != nil {
		errs = append(errs, err)
	}
	// Its errors name the setting and the fix themselves; they turn the store off, not the
	// data source.
	if out.SharedStore, err = sharedstore.ParseSettings(s.JSONData, s.DecryptedSecureJSONData); err != nil {
		out.SharedStore, out.SharedStoreErr = sharedstore.Settings{}, err
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
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
		return DefaultRequestsPerSecond, err
	}
	if v <= 0 || v > AccountQueryTPS {
		return DefaultRequestsPerSecond, fmt.Errorf("jsonData.requestsPerSecond %v is out of range: use a number above 0 and at most %d (CloudWatch allows %d query requests per second per account)", v, AccountQueryTPS, AccountQueryTPS)
	}
	return v, nil
}

// jsonTypeProblem describes a decode error without echoing the input, which could hold
// anything the user pasted.
func jsonTypeProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Keys of embedded parts come prefixed with their Go type's name.
		field := strings.TrimPrefix(strings.TrimPrefix(te.Field, "regionsJSON."), "resourcesJSON.")
		return fmt.Sprintf("key %q must be a %s, not a %s", field, te.Type, te.Value)
	}
	return "malformed JSON"
}

// String summarises the settings for logs. Secrets only say whether they are set.
func (s *Settings) String() string {
	return fmt.Sprintf("Settings{%s timeInterval=%s queryTimeout=%s httpMethod=%s maxConcurrency=%d requestsPerSecond=%g allowedRegions=%v %s priceTable=%d entries sharedStore=%s}",
		s.Auth, FormatDuration(s.TimeInterval), FormatDuration(s.QueryTimeout), s.HTTPMethod,
		s.MaxConcurrency, s.RequestsPerSecond, s.AllowedRegions, s.Resources, len(s.PriceTable), sharedStoreString(s.SharedStore))
}

// sharedStoreString summarises the store's settings: where it is and how it is reached,
// the password only as set or not.
func sharedStoreString(st sharedstore.Settings) string {
	if !st.Enabled() {
		return "none"
	}
	return fmt.Sprintf("%v(cluster=%t db=%d user=%q passwordSet=%t tls=%t prefix=%q timeout=%s)",
		st.Addresses, st.IsCluster(), st.Database, st.Username, st.Password.IsSet(), st.TLS, st.KeyPrefix, st.Timeout)
}
