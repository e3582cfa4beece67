// Package sharedstore is the optional store, speaking the Redis protocol (Redis 7, Valkey 8,
// ElastiCache, MemoryDB), that several replicas of the plugin share: cached extents in a
// compact checksummed encoding, a lease so that one replica fetches what all of them miss,
// and the AWS account's rate and concurrency budget. Every operation has a short deadline
// and every failure is an *Error the caller answers by falling back to its local cache and
// limiter: nothing a user sees may depend on the store being up.
package sharedstore

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// The settings' names, as errors name them.
const (
	SetAddresses     = "jsonData.sharedStore.addresses"
	SetDatabase      = "jsonData.sharedStore.database"
	SetUsername      = "jsonData.sharedStore.username"
	SetCluster       = "jsonData.sharedStore.cluster"
	SetTLS           = "jsonData.sharedStore.tls"
	SetTLSServerName = "jsonData.sharedStore.tlsServerName"
	SetKeyPrefix     = "jsonData.sharedStore.keyPrefix"
	SetTimeout       = "jsonData.sharedStore.timeout"
	SetAccountShare  = "jsonData.sharedStore.accountShare"
	SetFallbackShare = "jsonData.sharedStore.fallbackShare"
	SetPassword      = "secureJsonData.sharedStorePassword" // #nosec G101 -- the setting's path, named in errors, not a password
	SetTLSCACert     = "secureJsonData.sharedStoreTLSCACert"
)

const (
	// DefaultTimeout bounds every store operation: a store slower than this is treated as
	// unavailable, because a panel must never wait on it longer than a local cache miss costs.
	DefaultTimeout   = 50 * time.Millisecond
	DefaultKeyPrefix = "inferscope:"
	maxTimeout       = 2 * time.Second
	maxKeyPrefixLen  = 64
	maxDatabase      = 15 // Redis' default `databases 16`; ElastiCache's too
	// DefaultAccountShare is the percentage of the account's CloudWatch limits the data
	// source's replicas may use together: the rest is kept for the account's other clients
	// (the console, scripts, other tools).
	DefaultAccountShare = 80
	// DefaultFallbackShare is the percentage of that share one replica uses while the store
	// is unavailable: four replicas pacing themselves alone still stay within it.
	DefaultFallbackShare = 25
)

// Settings configure the store. The zero value (no addresses) means no store: the plugin
// keeps only its in-process cache and limiter, as it does by default.
type Settings struct {
	Addresses []string // host:port; several (or Cluster) mean a Redis Cluster
	Cluster   bool     // a single configuration endpoint of a cluster (ElastiCache cluster mode)
	Database  int
	Username  string
	Password  awsauth.Secret
	TLS       bool
	// TLSServerName is the name the server's certificate must carry; empty: the address' host.
	TLSServerName string
	TLSCACert     string // PEM; empty: the system's roots
	KeyPrefix     string
	Timeout       time.Duration
	// AccountShare is the percentage (1-100) of the account's limits this data source's
	// replicas may use together; FallbackShare the percentage of it one replica keeps to
	// while the store is unavailable. 0 means the default (Shares).
	AccountShare, FallbackShare int
}

// Shares are AccountShare and FallbackShare as fractions, their defaults for 0.
func (s Settings) Shares() (account, fallback float64) {
	pct := func(v, def int) float64 {
		if v == 0 {
			v = def
		}
		return float64(v) / 100
	}
	return pct(s.AccountShare, DefaultAccountShare), pct(s.FallbackShare, DefaultFallbackShare)
}

// Enabled says whether a store is configured.
func (s Settings) Enabled() bool { return len(s.Addresses) > 0 }

// IsCluster says whether the addresses name a Redis Cluster rather than one node.
func (s Settings) IsCluster() bool { return s.Cluster || len(s.Addresses) > 1 }

type jsonSettings struct {
	SharedStore *struct {
		Addresses     []string `json:"addresses"`
		Cluster       bool     `json:"cluster"`
		Database      int      `json:"database"`
		Username      string   `json:"username"`
		TLS           bool     `json:"tls"`
		TLSServerName string   `json:"tlsServerName"`
		KeyPrefix     *string  `json:"keyPrefix"`
		Timeout       string   `json:"timeout"`
		AccountShare  *int     `json:"accountShare"`
		FallbackShare *int     `json:"fallbackShare"`
	} `json:"sharedStore"`
}

// ParseSettings reads jsonData.sharedStore and the store's secrets. With no sharedStore
// object it returns disabled settings and no error. Every error names the setting and the
// fix; none holds a secret.
func ParseSettings(jsonData []byte, secure map[string]string) (Settings, error) {
	var js jsonSettings
	if len(jsonData) > 0 {
		if err := json.Unmarshal(jsonData, &js); err != nil {
			return Settings{}, fmt.Errorf("jsonData.sharedStore is not valid (%v): fix the provisioning file or re-save the data source", err)
		}
	}
	if js.SharedStore == nil {
		return Settings{}, nil
	}
	j := js.SharedStore
	s := Settings{
		Cluster:       j.Cluster,
		Database:      j.Database,
		Username:      strings.TrimSpace(j.Username),
		Password:      awsauth.Secret(secure["sharedStorePassword"]),
		TLS:           j.TLS,
		TLSServerName: strings.TrimSpace(j.TLSServerName),
		TLSCACert:     strings.TrimSpace(secure["sharedStoreTLSCACert"]),
		KeyPrefix:     DefaultKeyPrefix,
		Timeout:       DefaultTimeout,
	}
	if j.AccountShare != nil {
		s.AccountShare = *j.AccountShare
	}
	if j.FallbackShare != nil {
		s.FallbackShare = *j.FallbackShare
	}
	for _, a := range j.Addresses {
		if a = strings.TrimSpace(a); a != "" {
			s.Addresses = append(s.Addresses, a)
		}
	}
	if j.KeyPrefix != nil {
		s.KeyPrefix = strings.TrimSpace(*j.KeyPrefix)
	}
	var errs []error
	if j.Timeout != "" {
		d, err := time.ParseDuration(j.Timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q is not a duration: use one such as 50ms", SetTimeout, j.Timeout))
		} else {
			s.Timeout = d
		}
	}
	if err := s.Validate(); err != nil {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// Validate checks settings built in code as ParseSettings checks those it reads.
func (s Settings) Validate() error {
	if !s.Enabled() {
		// No address is no store: whatever else the section holds is kept for when an
		// address is typed again, and ignored until then.
		return nil
	}
	var errs []error
	for _, a := range s.Addresses {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port: write it as redis.internal:6379 (IPv6 as [::1]:6379)", SetAddresses, a))
			continue
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s: %q has no valid port: use 1-65535, usually 6379", SetAddresses, a))
		}
	}
	if s.Database < 0 || s.Database > maxDatabase {
		errs = append(errs, fmt.Errorf("%s %d is out of range: use 0-%d (0 when unsure)", SetDatabase, s.Database, maxDatabase))
	}
	if s.IsCluster() && s.Database != 0 {
		errs = append(errs, fmt.Errorf("%s is %d but a Redis Cluster has only database 0: set it to 0", SetDatabase, s.Database))
	}
	if s.Timeout <= 0 || s.Timeout > maxTimeout {
		errs = append(errs, fmt.Errorf("%s %s is out of range: use 1ms-%s; the default, %s, keeps a slow store from slowing panels", SetTimeout, s.Timeout, maxTimeout, DefaultTimeout))
	}
	switch {
	case s.KeyPrefix == "":
		errs = append(errs, fmt.Errorf("%s is empty: use a prefix such as %q, so the plugin's keys stay apart from other users of the store", SetKeyPrefix, DefaultKeyPrefix))
	case len(s.KeyPrefix) > maxKeyPrefixLen:
		errs = append(errs, fmt.Errorf("%s is %d bytes long: use at most %d", SetKeyPrefix, len(s.KeyPrefix), maxKeyPrefixLen))
	case strings.ContainsAny(s.KeyPrefix, "{} \t\r\n"):
		// A brace would become the key's cluster hash tag and put every key on one node.
		errs = append(errs, fmt.Errorf("%s %q contains a brace or a space: use letters, digits and ':' such as %q", SetKeyPrefix, s.KeyPrefix, DefaultKeyPrefix))
	}
	for _, p := range []struct {
		name   string
		v, def int
	}{{SetAccountShare, s.AccountShare, DefaultAccountShare}, {SetFallbackShare, s.FallbackShare, DefaultFallbackShare}} {
		if p.v < 0 || p.v > 100 {
			errs = append(errs, fmt.Errorf("%s %d is not a percentage: use 1-100, or 0 for the default (%d)", p.name, p.v, p.def))
		}
	}
	if strings.ContainsAny(s.Password.Reveal(), "\r\n") {
		errs = append(errs, fmt.Errorf("%s contains a line break: paste it again as one line", SetPassword))
	}
	if s.TLSServerName != "" && !s.TLS {
		errs = append(errs, fmt.Errorf("%s is set but %s is off: turn TLS on, or clear the server name", SetTLSServerName, SetTLS))
	}
	if s.TLSCACert != "" {
		if !s.TLS {
			errs = append(errs, fmt.Errorf("%s is set but %s is off: turn TLS on, or clear the CA certificate", SetTLSCACert, SetTLS))
		} else if !x509.NewCertPool().AppendCertsFromPEM([]byte(s.TLSCACert)) {
			errs = append(errs, fmt.Errorf("%s holds no PEM certificate: paste the CA's certificate, from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----", SetTLSCACert))
		}
	}
	return errors.Join(errs...)
}

// tlsConfig is the client's TLS configuration, nil without TLS.
func (s Settings) tlsConfig() *tls.Config {
	if !s.TLS {
		return nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.TLSServerName}
	if s.TLSCACert != "" {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(s.TLSCACert))
		c.RootCAs = pool
	}
	return c
}
