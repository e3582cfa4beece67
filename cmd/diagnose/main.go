// Command diagnose runs the automated diagnosis (pkg/diagnosis) against CloudWatch's PromQL
// API or the local emulator and prints the likely causes, ranked, with their evidence.
//
//	diagnose --url http://127.0.0.1:9090 --region us-east-1 --auth-type keys \
//	    --access-key AKIA... --secret-key ... --endpoint chat-ic --since 2h
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis/awspolicy"
	"github.com/inferscope/sagemaker-datasource/pkg/fault"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Exit codes, distinct so scripts can tell what to fix.
const (
	exitOK       = 0
	exitUpstream = 1 // CloudWatch could not be queried: credentials, network, every rule failed
	exitUsage    = 2 // bad flags
	exitNoData   = 3 // the --endpoint or --ic has no data in the range
)

// exitStatus documents the codes in --help.
const exitStatus = `Exit status:
  0  the diagnosis was printed (rules that failed are listed in it)
  1  CloudWatch could not be queried: credentials, network or endpoint; every rule failed
  2  bad flags
  3  --endpoint or --ic has no data in the time range (the message names those that have)`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv, time.Now))
}

// options is everything the flags set.
type options struct {
	scope      diagnosis.Scope
	from, to   string
	since      time.Duration
	auth       awsauth.Settings
	format     string
	timeout    time.Duration
	grafanaURL string
	rules      string
}

func newFlags(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("diagnose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scope.Endpoint, "endpoint", "", "SageMaker endpoint to diagnose; empty diagnoses the whole fleet")
	fs.StringVar(&o.scope.InferenceComponent, "ic", "", "inference component to diagnose (with or without --endpoint)")
	fs.StringVar(&o.from, "from", "", "start of the time range: RFC 3339 (2026-11-30T12:00:00Z) or Unix seconds; use with --to")
	fs.StringVar(&o.to, "to", "", "end of the time range, same formats; default now")
	fs.DurationVar(&o.since, "since", 0, "time range ending now (or at --to), e.g. 1h, 90m; default 1h when --from is not set")
	fs.StringVar(&o.auth.DatasourceURL, "url", "", "PromQL API base URL; default https://monitoring.<region>.amazonaws.com (the emulator prints its URL)")
	fs.StringVar(&o.auth.Region, "region", "", "AWS region the requests are signed for, e.g. us-east-1")
	fs.StringVar(&o.auth.AuthType, "auth-type", "", "default | keys | credentials | ec2_iam_role (as the plugin); default: keys when an access key is given, else default")
	fs.Var(&o.auth.AccessKey, "access-key", "access key id for --auth-type keys (default $AWS_ACCESS_KEY_ID)")
	fs.Var(&o.auth.SecretKey, "secret-key", "secret access key for --auth-type keys (default $AWS_SECRET_ACCESS_KEY)")
	fs.Var(&o.auth.SessionToken, "session-token", "session token for temporary keys (default $AWS_SESSION_TOKEN)")
	fs.StringVar(&o.auth.Profile, "profile", "", "shared-credentials profile for --auth-type credentials")
	fs.StringVar(&o.auth.AssumeRoleARN, "assume-role-arn", "", "IAM role to assume on top of the credentials")
	fs.StringVar(&o.auth.ExternalID, "external-id", "", "external id for --assume-role-arn")
	fs.StringVar(&o.format, "format", "text", "output: text (for a terminal) or json")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	fs.StringVar(&o.grafanaURL, "grafana-url", "", "Grafana base URL to make the panel links absolute, e.g. http://localhost:3000")
	fs.StringVar(&o.rules, "rules", "", "comma-separated rules to run; default all: "+strings.Join(diagnosis.RuleIDs(), ", "))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: diagnose [flags]")
		fmt.Fprintln(stderr, "\nRuns the reading rules of the Performance, Capacity and Reliability dashboards over a scope and a time range")
		fmt.Fprintln(stderr, "and prints the likely causes, ranked, each with its evidence, next step and dashboard link.")
		fmt.Fprintln(stderr, "Against the emulator: go -C rig run ./cmd/emulator --scenario kv-saturation, then pass the URL and keys it prints.")
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\n"+exitStatus)
	}
	return fs
}

// usageError is a bad flag value; it exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// parse reads the flags and environment and returns the options and the time range.
func parse(args []string, stderr io.Writer, getenv func(string) string, now time.Time) (*options, time.Time, time.Time, error) {
	o := &options{}
	fs := newFlags(o, stderr)
	if err := fs.Parse(args); err != nil {
		return nil, time.Time{}, time.Time{}, err
	}
	if fs.NArg() > 0 {
		return nil, time.Time{}, time.Time{}, usageError{fmt.Sprintf("unexpected argument %q: every option is a flag (see --help)", fs.Arg(0))}
	}
	for _, e := range []struct {
		dst *awsauth.Secret
		env string
	}{{&o.auth.AccessKey, "AWS_ACCESS_KEY_ID"}, {&o.auth.SecretKey, "AWS_SECRET_ACCESS_KEY"}, {&o.auth.SessionToken, "AWS_SESSION_TOKEN"}} {
		if !e.dst.IsSet() {
			*e.dst = awsauth.Secret(getenv(e.env))
		}
	}
	if o.auth.AuthType == "" && o.auth.AccessKey.IsSet() {
		o.auth.AuthType = awsauth.AuthKeys
	}
	if o.format != "text" && o.format != "json" {
		return nil, time.Time{}, time.Time{}, usageError{fmt.Sprintf("--format %q: use text or json", o.format)}
	}
	if o.timeout <= 0 {
		return nil, time.Time{}, time.Time{}, usageError{"--timeout must be positive, e.g. 2m"}
	}
	end := now
	if o.to != "" {
		t, err := parseTime(o.to)
		if err != nil {
			return nil, time.Time{}, time.Time{}, usageError{"--to: " + err.Error()}
		}
		end = t
	}
	var start time.Time
	switch {
	case o.from != "" && o.since != 0:
		return nil, time.Time{}, time.Time{}, usageError{"give either --from or --since, not both"}
	case o.from != "":
		t, err := parseTime(o.from)
		if err != nil {
			return nil, time.Time{}, time.Time{}, usageError{"--from: " + err.Error()}
		}
		start = t
	case o.since < 0:
		return nil, time.Time{}, time.Time{}, usageError{"--since must be positive, e.g. 1h"}
	case o.since > 0:
		start = end.Add(-o.since)
	default:
		start = end.Add(-time.Hour)
	}
	if !end.After(start) {
		return nil, time.Time{}, time.Time{}, usageError{fmt.Sprintf("the time range is empty: --from %s is not before --to %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))}
	}
	return o, start, end, nil
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.UnixMilli(int64(f * 1000)), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-11-30T12:00:00Z) nor Unix seconds", s)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, now func() time.Time) int {
	o, start, end, err := parse(args, stderr, getenv, now())
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "diagnose:", err)
			fmt.Fprintln(stderr, "Run diagnose --help for the flags.")
		}
		// flag's own errors are already printed with the usage
		return exitUsage
	}
	cfg := diagnosis.DefaultConfig()
	for _, id := range strings.Split(o.rules, ",") {
		if id = strings.TrimSpace(id); id != "" {
			cfg.Rules = append(cfg.Rules, id)
		}
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(stderr, "diagnose:", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	region, fc, err := newRegion(ctx, o.auth)
	if err != nil {
		fmt.Fprintln(stderr, "diagnose:", err)
		return exitUsage
	}
	r, err := diagnosis.RunRegions(ctx, []diagnosis.Region{region}, o.scope, start, end, cfg)
	var noData *diagnosis.ScopeError
	switch {
	case errors.As(err, &noData):
		fmt.Fprintln(stderr, "diagnose:", err)
		fmt.Fprintln(stderr, "Check --endpoint and --ic, or the account, --region and time range they run in.")
		return exitNoData
	case err != nil:
		fmt.Fprintln(stderr, "diagnose:", err)
		return exitUsage
	}
	for i, f := range r.Failures {
		r.Failures[i].Error = message(f.Err, fc)
	}
	if o.grafanaURL != "" {
		base := strings.TrimRight(o.grafanaURL, "/")
		for i := range r.Findings {
			if r.Findings[i].PanelLink != "" {
				r.Findings[i].PanelLink = base + r.Findings[i].PanelLink
			}
		}
	}
	if o.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(stderr, "diagnose:", err)
			return exitUpstream
		}
	} else {
		printText(stdout, r)
	}
	if len(r.Failures) > 0 && len(r.Failures) >= r.Ran {
		fmt.Fprintln(stderr, "diagnose: no rule could query CloudWatch:", r.Failures[0].Error)
		return exitUpstream
	}
	return exitOK
}

// newRegion builds the same chain as the plugin: credentials, endpoint safety check, SigV4
// signing (service monitoring), then the paced, retrying client; and, on the same
// credentials, the autoscaling policies the scaling rule judges against (Application Auto
// Scaling; without the permission the report says it judged without them). The context it
// returns lets messages name the endpoint and region the flags gave.
func newRegion(ctx context.Context, s awsauth.Settings) (diagnosis.Region, fault.Context, error) {
	if s.Region == "" {
		return diagnosis.Region{}, fault.Context{}, errors.New("no region: pass --region (the region requests are signed for, e.g. us-east-1)")
	}
	ep, err := awsauth.ResolveEndpoint(s)
	if err != nil {
		return diagnosis.Region{}, fault.Context{}, errors.New(message(err, fault.Context{Names: cliNames}))
	}
	fc := fault.Context{Endpoint: ep.URL.Redacted(), Region: ep.Region, Names: cliNames}
	// Outside Grafana there is no [aws] section to honour: every auth type is allowed.
	ctx = backend.WithGrafanaConfig(ctx, backend.NewGrafanaCfg(map[string]string{
		awsauth.KeyAllowedAuthProviders: strings.Join([]string{awsauth.AuthDefault, awsauth.AuthKeys, awsauth.AuthCredentials, awsauth.AuthEC2IAMRole}, ","),
	}))
	creds, err := awsauth.NewCredentialsProvider(ctx, s, awsauth.Deps{})
	if err != nil {
		return diagnosis.Region{}, fc, errors.New(message(err, fc))
	}
	c, err := promclient.New(promclient.Options{BaseURL: ep.URL, Transport: awsauth.Transport(nil, creds, ep, secrets), UserAgent: "inferscope-diagnose"})
	if err != nil {
		return diagnosis.Region{}, fc, err
	}
	return diagnosis.Region{Querier: diagnosis.NewPromClientQuerier(c), Policies: awspolicy.Source(awsapi.NewWithCredentials(creds, ep, secrets), time.Now),
		Changes: awspolicy.Changes(awsapi.NewChanges(creds, ep, secrets))}, fc, nil
}

// flagNames are this command's names for the settings pkg/awsauth's messages name.
var flagNames = map[awsauth.Setting]string{
	awsauth.SetRegion:        "--region",
	awsauth.SetAuthType:      "--auth-type",
	awsauth.SetAssumeRoleARN: "--assume-role-arn",
	awsauth.SetExternalID:    "--external-id",
	awsauth.SetProfile:       "--profile",
	awsauth.SetEndpoint:      "--url",
	awsauth.SetURL:           "--url",
	awsauth.SetAccessKey:     "--access-key",
	awsauth.SetSecretKey:     "--secret-key",
	awsauth.SetSessionToken:  "--session-token",
}

// cliNames are this command's words for what pkg/fault's messages ask the user to fix.
var cliNames = fault.Names{
	Region:   flagNames[awsauth.SetRegion],
	Endpoint: flagNames[awsauth.SetURL] + " (or " + flagNames[awsauth.SetRegion] + " without it)",
	Credentials: flagNames[awsauth.SetAccessKey] + " and " + flagNames[awsauth.SetSecretKey] +
		" (or " + flagNames[awsauth.SetProfile] + " / " + flagNames[awsauth.SetAssumeRoleARN] + ")",
	Identity:    "the user or role diagnose runs as (" + flagNames[awsauth.SetAuthType] + ")",
	Timeout:     "--timeout",
	Rate:        "other clients of this AWS account use the same quota; run diagnose again in a minute",
	Concurrency: "other clients of this AWS account use the same quota; run diagnose again in a minute, or fewer rules at once (--rules)",
	Machine:     "this machine",
}

// secrets learns the credentials the signer uses, so no message prints them.
var secrets = awsauth.NewRedactor()

// message is err as pkg/fault explains it to a user of this command, with the settings
// named by their flags, redacted like everything the plugin shows.
func message(err error, c fault.Context) string { return secrets.String(explain(err, c)) }

func explain(err error, c fault.Context) string {
	var se *awsauth.SettingError
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		parts := make([]string, 0, len(joined.Unwrap()))
		for _, e := range joined.Unwrap() {
			parts = append(parts, explain(e, c))
		}
		return strings.Join(parts, "; ")
	}
	if errors.As(err, &se) {
		return se.Named(flagNames)
	}
	return fault.Explain(err, c).Message
}
