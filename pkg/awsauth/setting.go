package awsauth

import (
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Setting is a setting awsauth's messages name. Its value is the datasource's name for it;
// other front ends (the diagnose CLI's flags) pass their own names to SettingError.Named.
type Setting string

const (
	SetAuthType      Setting = "jsonData.authType"
	SetRegion        Setting = "jsonData.defaultRegion"
	SetProfile       Setting = "jsonData.profile"
	SetAssumeRoleARN Setting = "jsonData.assumeRoleArn"
	SetExternalID    Setting = "jsonData.externalId"
	SetEndpoint      Setting = "jsonData.endpoint"
	SetURL           Setting = "the datasource URL"
	SetAccessKey     Setting = "secureJsonData.accessKey"
	SetSecretKey     Setting = "secureJsonData.secretKey"    // #nosec G101 -- the setting's path, named in errors, not a key
	SetSessionToken  Setting = "secureJsonData.sessionToken" // #nosec G101 -- the setting's path, named in errors, not a token
)

// SettingError is a problem with settings the user must fix. Its text names the settings
// by the names of whoever configured them.
type SettingError struct {
	Settings []Setting
	format   string // %[1]s… are the settings' names, then args
	args     []any
}

func settingErrorf(settings []Setting, format string, args ...any) error {
	return &SettingError{Settings: settings, format: format, args: args}
}

// Error names the settings as the datasource does.
func (e *SettingError) Error() string { return e.Named(nil) }

// Named renders the message with names[s] for each setting (its datasource name when absent).
func (e *SettingError) Named(names map[Setting]string) string {
	args := make([]any, 0, len(e.Settings)+len(e.args))
	for _, s := range e.Settings {
		n, ok := names[s]
		if !ok {
			n = string(s)
		}
		args = append(args, n)
	}
	return fmt.Sprintf(e.format, append(args, e.args...)...)
}

// Is makes backend.IsDownstreamError see a settings problem as the user's to fix.
func (e *SettingError) Is(target error) bool {
	t, ok := target.(backend.ErrorWithSource)
	return ok && t.ErrorSource() == backend.ErrorSourceDownstream
}
