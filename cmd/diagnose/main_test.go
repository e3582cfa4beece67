package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
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
		{"bad scaling target", []string{"--scaling-target", "chat=-3"}, "want IC=TARGET with a positive number"},
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
	for _, f := range []string{"-endpoint", "-ic", "-from", "-to", "-since", "-url", "-region", "-auth-type", "-access-key", "-secret-key", "-session-token", "-profile", "-assume-role-arn", "-external-id", "-format", "-scaling-target"} {
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
