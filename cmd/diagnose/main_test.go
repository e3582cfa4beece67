package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/stack"
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
		{"bad region", []string{"--region", "mars"}, "is not an AWS region name"},
		{"no region", []string{"--url", "http://127.0.0.1:1"}, "no region"},
		{"credentials in the URL", []string{"--url", "http://user:pw@127.0.0.1:1", "--region", "us-east-1"}, "must not carry user credentials"},
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

// TestAgainstEmulator runs the command against a signed emulator serving the kv-saturation
// scenario, with the keys from the environment as a user would export them.
func TestAgainstEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator stack")
	}
	st, err := stack.Start(context.Background(), stack.Options{Scenario: "kv-saturation", Seed: 42, History: 3 * time.Hour, End: stack.PinnedEnd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	env := map[string]string{"AWS_ACCESS_KEY_ID": st.AccessKey, "AWS_SECRET_ACCESS_KEY": st.SecretKey}
	base := []string{"--url", st.URL, "--region", st.Region, "--to", st.End.Format(time.RFC3339), "--since", "3h", "--grafana-url", "http://localhost:3000/"}

	t.Run("text", func(t *testing.T) {
		code, out, errOut := runCLI(t, env, base...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		first := strings.Index(out, " 1. ")
		if first < 0 || !strings.HasPrefix(out[first:], " 1. CRITICAL KV cache saturation") {
			t.Fatalf("first finding is not KV saturation:\n%s", out)
		}
		for _, want := range []string{"scope     inference-component chat-llama-8b (chat-ic)", "evidence  KV cache usage", "panel     http://localhost:3000/d/inferscope-performance?"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out+errOut, st.SecretKey) {
			t.Fatal("the secret key leaked into the output")
		}
	})
	t.Run("json, one endpoint", func(t *testing.T) {
		code, out, errOut := runCLI(t, env, append(base, "--format", "json", "--endpoint", "chat-ic")...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var r struct {
			Scope    diagnosis.Scope
			Findings []struct{ Rule, Severity string }
			Requests int
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if r.Scope.Endpoint != "chat-ic" || len(r.Findings) == 0 || r.Findings[0].Rule != "kv-cache-saturation" || r.Findings[0].Severity != "critical" || r.Requests == 0 || r.Requests > 40 {
			t.Fatalf("json report %+v", r)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		code, out, errOut := runCLI(t, map[string]string{"AWS_ACCESS_KEY_ID": st.AccessKey, "AWS_SECRET_ACCESS_KEY": "wrong" + st.SecretKey[5:]}, base...)
		if code != exitRun || !strings.Contains(errOut, "403") {
			t.Fatalf("exit %d, stderr %q; want exit 1 naming the 403", code, errOut)
		}
		if n := strings.Count(out, "because"); n != 1 || !strings.Contains(out, "not run   az-traffic, cold-start, engine-queueing") {
			t.Fatalf("one shared cause must be printed once for all rules (%d times):\n%s", n, out)
		}
		if strings.Contains(out+errOut, st.SecretKey[5:]) {
			t.Fatal("the secret key leaked into the output")
		}
	})
}
