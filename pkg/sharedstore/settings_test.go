package sharedstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSettings(t *testing.T) {
	ca := newPKI(t).caPEM
	const secret = "s3cr3t-Pa55"
	tests := []struct {
		name    string
		json    string
		secure  map[string]string
		want    Settings
		wantErr []string // each must appear in the error
	}{
		{name: "no section: no store", json: `{"authType":"default"}`, want: Settings{}},
		{name: "one node, defaults", json: `{"sharedStore":{"addresses":[" redis:6379 "]}}`,
			want: Settings{Addresses: []string{"redis:6379"}, KeyPrefix: DefaultKeyPrefix, Timeout: DefaultTimeout}},
		{name: "everything", json: `{"sharedStore":{"addresses":["a:6379","b:6380"],"username":"grafana","tls":true,"tlsServerName":"redis.internal","keyPrefix":"team-a:","timeout":"80ms","accountShare":50,"fallbackShare":10}}`,
			secure: map[string]string{"sharedStorePassword": secret, "sharedStoreTLSCACert": ca},
			want: Settings{Addresses: []string{"a:6379", "b:6380"}, Username: "grafana", Password: secret, TLS: true, TLSServerName: "redis.internal",
				TLSCACert: strings.TrimSpace(ca), KeyPrefix: "team-a:", Timeout: 80 * time.Millisecond, AccountShare: 50, FallbackShare: 10}},
		{name: "no port", json: `{"sharedStore":{"addresses":["redis"]}}`, wantErr: []string{SetAddresses, `"redis" is not host:port`, "redis.internal:6379"}},
		{name: "bad port", json: `{"sharedStore":{"addresses":["redis:99999"]}}`, wantErr: []string{SetAddresses, "no valid port"}},
		{name: "database out of range", json: `{"sharedStore":{"addresses":["r:1"],"database":16}}`, wantErr: []string{SetDatabase, "use 0-15"}},
		{name: "database in a cluster", json: `{"sharedStore":{"addresses":["r:1"],"cluster":true,"database":2}}`, wantErr: []string{SetDatabase, "only database 0"}},
		{name: "timeout not a duration", json: `{"sharedStore":{"addresses":["r:1"],"timeout":"fast"}}`, wantErr: []string{SetTimeout, "such as 50ms"}},
		{name: "timeout too long", json: `{"sharedStore":{"addresses":["r:1"],"timeout":"1m"}}`, wantErr: []string{SetTimeout, "out of range"}},
		{name: "empty prefix", json: `{"sharedStore":{"addresses":["r:1"],"keyPrefix":""}}`, wantErr: []string{SetKeyPrefix, "is empty"}},
		{name: "prefix with a hash tag", json: `{"sharedStore":{"addresses":["r:1"],"keyPrefix":"a{b}:"}}`, wantErr: []string{SetKeyPrefix, "brace"}},
		{name: "password with a line break", json: `{"sharedStore":{"addresses":["r:1"]}}`, secure: map[string]string{"sharedStorePassword": secret + "\n"},
			wantErr: []string{SetPassword, "one line"}},
		{name: "server name without TLS", json: `{"sharedStore":{"addresses":["r:1"],"tlsServerName":"x"}}`, wantErr: []string{SetTLSServerName, "turn TLS on"}},
		{name: "CA that is not PEM", json: `{"sharedStore":{"addresses":["r:1"],"tls":true}}`, secure: map[string]string{"sharedStoreTLSCACert": "MIIB..."},
			wantErr: []string{SetTLSCACert, "BEGIN CERTIFICATE"}},
		{name: "credentials without address: no store, kept", json: `{"sharedStore":{"username":"u","tls":true}}`, want: Settings{Username: "u", TLS: true, KeyPrefix: DefaultKeyPrefix, Timeout: DefaultTimeout}},
		{name: "share over 100", json: `{"sharedStore":{"addresses":["r:1"],"accountShare":120}}`, wantErr: []string{SetAccountShare, "1-100"}},
		{name: "negative fallback share", json: `{"sharedStore":{"addresses":["r:1"],"fallbackShare":-5}}`, wantErr: []string{SetFallbackShare, "1-100"}},
		{name: "wrong type", json: `{"sharedStore":{"addresses":"r:1"}}`, wantErr: []string{"jsonData.sharedStore", "re-save"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSettings([]byte(tc.json), tc.secure)
			if tc.wantErr == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				assert.NotContains(t, fmt.Sprintf("%+v %#v", got, got), secret, "printed settings hide the password")
				return
			}
			require.Error(t, err)
			for _, w := range tc.wantErr {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), secret, "an error must never show the password")
		})
	}
}

func TestIsCluster(t *testing.T) {
	assert.False(t, Settings{Addresses: []string{"a:1"}}.IsCluster())
	assert.True(t, Settings{Addresses: []string{"a:1", "b:1"}}.IsCluster())
	assert.True(t, Settings{Addresses: []string{"cfg:1"}, Cluster: true}.IsCluster())
}

func TestShares(t *testing.T) {
	for _, tc := range []struct {
		set               Settings
		account, fallback float64
	}{
		{Settings{}, 0.80, 0.25},
		{Settings{AccountShare: 50, FallbackShare: 10}, 0.50, 0.10},
		{Settings{AccountShare: 100}, 1, 0.25},
	} {
		a, f := tc.set.Shares()
		require.InDelta(t, tc.account, a, 1e-9)
		require.InDelta(t, tc.fallback, f, 1e-9)
	}
}
