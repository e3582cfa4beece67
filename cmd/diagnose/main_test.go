package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/fault"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

var fixedNow = time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC)

func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] }, func() time.Time { return fixedNow })
	return code, out.String(), errOut.String()
}

func TestFlagErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined: -nope"},
		{"format", []string{"--format", "xml"}, `--format "xml": use text or json`},
		{"from and since", []string{"--from", "2026-11-30T10:00:00Z", "--since", "1h"}, "either --from or --since"},
		{"bad time", []string{"--from", "yesterday"}, `--from: "yesterday" is neither RFC 3339`},
		{"empty range", []string{"--from", "2026-11-30T15:00:00Z"}, "the time range is empty"},
		{"negative since", []string{"--since", "-1h"}, "--since must be positive"},
		{"positional", []string{"chat-ic"}, `unexpected argument "chat-ic"`},
		{"unknown rule", []string{"--region", "us-east-1", "--rules", "kv"}, `unknown rule "kv"`},
		{"bad region", []string{"--region", "mars"}, `--region "mars" is not an AWS region name`},
		{"no region", []string{"--url", "http://127.0.0.1:1"}, "no region"},
		{"credentials in the URL", []string{"--url", "http://user:pw@127.0.0.1:1", "--region", "us-east-1"}, "--url must not carry user credentials"},
		{"keys without a secret", []string{"--region", "us-east-1", "--auth-type", "keys", "--access-key", "AKIDX"}, "--secret-key is empty"},
		{"access key with a line break", []string{"--region", "us-east-1", "--access-key", "AKID\nX", "--secret-key", "s"}, "--access-key contains a line break"},
		{"unknown auth type", []string{"--region", "us-east-1", "--auth-type", "sso"}, `--auth-type "sso" is not supported`},
		{"range too long", []string{"--since", "200h", "--region", "us-east-1", "--access-key", "AKIAEXAMPLE", "--secret-key", "x"}, "at most 7 days"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, nil, c.args...)
			if code != exitUsage || !strings.Contains(errOut, c.want) || out != "" {
				t.Fatalf("exit %d, stderr %q, stdout %q; want exit 2 and %q", code, errOut, out, c.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	code, _, errOut := runCLI(t, nil, "--help")
	if code != exitOK {
		t.Fatalf("--help exits %d", code)
	}
	for _, f := range []string{"-endpoint", "-ic", "-from", "-to", "-since", "-url", "-region", "-auth-type", "-access-key", "-secret-key", "-session-token", "-profile", "-assume-role-arn", "-external-id", "-format"} {
		if !strings.Contains(errOut, f+" ") {
			t.Errorf("--help does not document %s", f)
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aa bb cc dd", 5)
	if strings.Join(got, "|") != "aa bb|cc dd" {
		t.Fatalf("wrap = %q", got)
	}
	if got := wrap("", 5); len(got) != 1 || got[0] != "" {
		t.Fatalf("wrap of nothing = %q", got)
	}
	if got := wrap("https://a.very/long/url ok", 5); got[0] != "https://a.very/long/url" {
		t.Fatalf("a long word stays whole: %q", got)
	}
}

// cloudWatch is a stand-in PromQL API on loopback: every query gets answer.
func cloudWatch(t *testing.T, status int, answer string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var keys = map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret-example"}

// TestWrongRegionNamesTheFlag: a refusal for the signing region names --region and the value
// given, in the CLI's words, and exits as an upstream failure.
func TestWrongRegionNamesTheFlag(t *testing.T) {
	url := cloudWatch(t, http.StatusForbidden, `{"__type":"InvalidSignatureException","message":"`+sigv4verify.MsgWrongRegion+`"}`)
	code, out, errOut := runCLI(t, keys, "--url", url, "--region", "eu-west-1")
	if code != exitUpstream {
		t.Fatalf("exit %d, want %d:\n%s", code, exitUpstream, errOut)
	}
	report := strings.Join(strings.Fields(out), " ") // the report wraps lines
	for _, want := range []string{`requests are signed for "eu-west-1"`, "CloudWatch (" + url + ")", "Set --region to the region the endpoint serves"} {
		if !strings.Contains(errOut, want) || !strings.Contains(report, want) {
			t.Errorf("stderr and report must say %q:\nstderr: %s\nreport: %s", want, errOut, out)
		}
	}
	for _, leak := range []string{"Default Region", "datasource", "Grafana server"} {
		if strings.Contains(out+errOut, leak) {
			t.Errorf("the CLI's message names the datasource's %q:\n%s%s", leak, out, errOut)
		}
	}
}

// TestTimeoutNamesTheFlag: running out of --timeout says to raise it, not a datasource setting.
func TestTimeoutNamesTheFlag(t *testing.T) {
	got := message(context.DeadlineExceeded, fault.Context{Names: cliNames})
	if !strings.Contains(got, "raise --timeout") || !strings.Contains(got, "from this machine") || strings.Contains(got, "datasource") {
		t.Fatalf("timeout message %q", got)
	}
}

// TestUnknownEndpointExitsNoData: a scope without data is its own exit status, naming the
// endpoints that have data.
func TestUnknownEndpointExitsNoData(t *testing.T) {
	url := cloudWatch(t, http.StatusOK, `{"status":"success","data":{"resultType":"vector","result":[`+
		`{"metric":{"`+semconv.LabelEndpoint+`":"chat"},"value":[1764513000,"2"]},`+
		`{"metric":{"`+semconv.LabelEndpoint+`":"summarize"},"value":[1764513000,"1"]}]}}`)
	code, out, errOut := runCLI(t, keys, "--url", url, "--region", "us-east-1", "--endpoint", "chta")
	if code != exitNoData || out != "" || !strings.Contains(errOut, `endpoint "chta" has no data`) || !strings.Contains(errOut, "endpoints with data: chat, summarize") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d naming the endpoints with data", code, out, errOut, exitNoData)
	}
}

// TestExitCodesAreDistinctAndDocumented: each exit status has its own number and a line in --help.
func TestExitCodesAreDistinctAndDocumented(t *testing.T) {
	codes := []int{exitOK, exitUpstream, exitUsage, exitNoData}
	_, _, help := runCLI(t, nil, "--help")
	seen := map[int]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Errorf("exit status %d is used twice", c)
		}
		seen[c] = true
		if !strings.Contains(help, fmt.Sprintf("\n  %d  ", c)) {
			t.Errorf("--help does not document exit status %d:\n%s", c, help)
		}
	}
}
