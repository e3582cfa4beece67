package awsauth

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Keys under which Grafana passes its [aws] settings to plugins.
const (
	KeyAllowedAuthProviders = "AWS_AUTH_AllowedAuthProviders"
	KeyAssumeRoleEnabled    = "AWS_AUTH_AssumeRoleEnabled"
)

// Gate is what the Grafana server allows datasources to use.
type Gate struct {
	AllowedAuthProviders []string
	AssumeRoleEnabled    bool
}

// GateFromContext reads Grafana's [aws] settings from the request context,
// with Grafana's defaults when they are unset.
func GateFromContext(ctx context.Context) Gate {
	cfg := backend.GrafanaConfigFromContext(ctx)
	g := Gate{AllowedAuthProviders: []string{AuthDefault, AuthKeys, AuthCredentials}, AssumeRoleEnabled: true}
	if v := strings.TrimSpace(cfg.Get(KeyAllowedAuthProviders)); v != "" {
		g.AllowedAuthProviders = nil
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				g.AllowedAuthProviders = append(g.AllowedAuthProviders, p)
			}
		}
	}
	if v := strings.TrimSpace(cfg.Get(KeyAssumeRoleEnabled)); v != "" {
		// An unparsable value keeps the permissive default, as Grafana's own parsing does.
		if b, err := strconv.ParseBool(v); err == nil {
			g.AssumeRoleEnabled = b
		}
	}
	return g
}

// Check refuses settings the server does not allow. Errors are downstream:
// the fix is in the datasource or server configuration.
func (g Gate) Check(s Settings) error {
	at := s.effectiveAuthType()
	if !slices.Contains(AuthTypes, at) {
		return s.Validate()
	}
	if !slices.Contains(g.AllowedAuthProviders, at) {
		return settingErrorf([]Setting{SetAuthType}, "authentication type %[2]q is not allowed on this Grafana server (allowed: %[3]s); "+
			"choose an allowed type in %[1]s or ask the Grafana admin to add it to [aws] allowed_auth_providers",
			at, strings.Join(g.AllowedAuthProviders, ", "))
	}
	if s.AssumeRoleARN != "" && !g.AssumeRoleEnabled {
		return settingErrorf([]Setting{SetAssumeRoleARN}, "assume role is disabled on this Grafana server ([aws] assume_role_enabled = false); "+
			"clear %[1]s or ask the Grafana admin to enable it")
	}
	return nil
}
