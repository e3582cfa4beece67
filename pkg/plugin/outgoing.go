package plugin

import (
	"errors"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// Everything the plugin hands to Grafana passes through this file: query responses,
// resource bodies, health results and log lines are redacted at the exits (QueryData,
// CallResource, CheckHealth, logError), never at the places that build them.

// logSecrets knows the secrets of every datasource instance in this process: log lines
// are not per datasource. Each instance pins its secureJsonData until disposed, so other
// instances' credential churn cannot evict it.
var logSecrets = awsauth.NewRedactor()

// sinks fans the signer's credentials out to the instance's redactor and the log's.
type sinks []*awsauth.Redactor

func (s sinks) Add(secrets ...string) {
	for _, r := range s {
		r.Add(secrets...)
	}
}

// logError, logWarn, logInfo and logDebug log with the message and every argument redacted.
func logError(msg string, args ...any) {
	backend.Logger.Error(logSecrets.String(msg), redactArgs(args)...)
}
func logWarn(msg string, args ...any) {
	backend.Logger.Warn(logSecrets.String(msg), redactArgs(args)...)
}
func logInfo(msg string, args ...any) {
	backend.Logger.Info(logSecrets.String(msg), redactArgs(args)...)
}
func logDebug(msg string, args ...any) {
	backend.Logger.Debug(logSecrets.String(msg), redactArgs(args)...)
}

func redactArgs(args []any) []any {
	for i, a := range args {
		args[i] = logSecrets.String(fmt.Sprint(a))
	}
	return args
}

// redactQueryResponse removes secrets from every string of every response: errors,
// notices (upstream warnings and infos, diagnosis notices), frame metadata, names,
// labels, links and string cells.
func (d *Datasource) redactQueryResponse(resp *backend.QueryDataResponse) {
	if resp == nil {
		return
	}
	for ref, dr := range resp.Responses {
		if dr.Error != nil {
			if msg := d.redact.String(dr.Error.Error()); msg != dr.Error.Error() {
				dr.Error = errors.New(msg)
			}
		}
		for _, f := range dr.Frames {
			d.redactFrame(f)
		}
		resp.Responses[ref] = dr
	}
}

func (d *Datasource) redactFrame(f *data.Frame) {
	s := d.redact.String
	f.Name = s(f.Name)
	if m := f.Meta; m != nil {
		m.ExecutedQueryString = s(m.ExecutedQueryString)
		for i := range m.Notices {
			m.Notices[i].Text = s(m.Notices[i].Text)
		}
		for i := range m.Stats {
			m.Stats[i].DisplayName = s(m.Stats[i].DisplayName)
		}
	}
	for _, fld := range f.Fields {
		fld.Name = s(fld.Name)
		if len(fld.Labels) > 0 {
			clean := make(data.Labels, len(fld.Labels))
			for k, v := range fld.Labels {
				clean[s(k)] = s(v)
			}
			fld.Labels = clean
		}
		if c := fld.Config; c != nil {
			c.DisplayNameFromDS = s(c.DisplayNameFromDS)
			for i := range c.Links {
				c.Links[i].Title, c.Links[i].URL = s(c.Links[i].Title), s(c.Links[i].URL)
			}
		}
		if fld.Type() == data.FieldTypeString {
			for i := range fld.Len() {
				v := fld.At(i).(string)
				if c := s(v); c != v {
					fld.Set(i, c)
				}
			}
		}
	}
}
