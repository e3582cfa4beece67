// Package diagnose_test runs the diagnose command against the emulator stack; it lives in
// the rig module because the stack needs the Prometheus TSDB.
package diagnose_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/rig/itest/gobuild"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// runCommand runs bin with args and only the given environment (plus a HOME of its own, so
// no AWS profile of the host is read) and returns its exit code, stdout and stderr.
func runCommand(t *testing.T, bin string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %s: %v", bin, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestAgainstEmulator runs the built command against a signed emulator serving the
// kv-saturation scenario, with the keys from the environment as a user would export them.
func TestAgainstEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulator stack")
	}
	st, err := stack.Start(context.Background(), stack.Options{Scenario: "kv-saturation", Seed: 42, History: 3 * time.Hour, End: stack.PinnedEnd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	bin := gobuild.Build(t, "github.com/inferscope/sagemaker-datasource/cmd/diagnose", t.TempDir(), "diagnose")
	runCLI := func(t *testing.T, env map[string]string, args ...string) (int, string, string) {
		t.Helper()
		return runCommand(t, bin, env, args...)
	}
	env := map[string]string{"AWS_ACCESS_KEY_ID": st.AccessKey, "AWS_SECRET_ACCESS_KEY": st.SecretKey}
	base := []string{"--url", st.URL, "--region", st.Region, "--to", st.End.Format(time.RFC3339), "--since", "3h", "--grafana-url", "http://localhost:3000/"}

	t.Run("text", func(t *testing.T) {
		code, out, errOut := runCLI(t, env, base...)
		if code != 0 {
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
		if code != 0 {
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
	t.Run("misspelt endpoint", func(t *testing.T) {
		code, out, errOut := runCLI(t, env, append(base, "--endpoint", "chat-ik")...)
		if code != 3 || !strings.Contains(errOut, `endpoint "chat-ik" has no data`) || !strings.Contains(errOut, "chat-ic, ") || strings.Contains(out, "No likely cause") {
			t.Fatalf("exit %d, stdout %q, stderr %q: want exit 3 naming the endpoints with data", code, out, errOut)
		}
	})
	t.Run("wrong region", func(t *testing.T) {
		args := append([]string{}, base...)
		for i := range args {
			if args[i] == "--region" {
				args[i+1] = "eu-west-1"
			}
		}
		code, _, errOut := runCLI(t, env, args...)
		if code != 1 || !strings.Contains(errOut, `requests are signed for "eu-west-1"`) || !strings.Contains(errOut, "Set --region to the region the endpoint serves") ||
			strings.Contains(errOut, "Default Region") {
			t.Fatalf("exit %d, stderr %q; want exit 1 naming --region and the value given", code, errOut)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		code, out, errOut := runCLI(t, map[string]string{"AWS_ACCESS_KEY_ID": st.AccessKey, "AWS_SECRET_ACCESS_KEY": "wrong" + st.SecretKey[5:]}, base...)
		if code != 1 || !strings.Contains(errOut, "403") {
			t.Fatalf("exit %d, stderr %q; want exit 1 naming the 403", code, errOut)
		}
		if n := strings.Count(out, "because"); n != 1 || !strings.Contains(out, "failed    az-traffic, cold-start, engine-queueing") {
			t.Fatalf("one shared cause must be printed once for all rules (%d times):\n%s", n, out)
		}
		if strings.Contains(out+errOut, st.SecretKey[5:]) {
			t.Fatal("the secret key leaked into the output")
		}
	})
}

// TestScalingNamedFromThePolicy: as users run it (`--since 1h`, default configuration), the
// command reads the IC's autoscaling policy with its credentials and names "autoscaling did
// not fire" a few minutes after the overload began; without the permission it cannot yet
// (the inferred limit needs 30 minutes) and says why.
func TestScalingNamedFromThePolicy(t *testing.T) {
	runDiagnose(t, "scaling-not-firing", 5*time.Minute, []diagnoseCase{
		{"with the policy", nil, []string{" 1. CRITICAL Autoscaling did not fire", "scaling policy (Application Auto Scaling): target 16", "max 4"}, "warning: autoscaling policies"},
		{"policies denied", []string{"application-autoscaling:DescribeScalableTargets"}, []string{"warning: autoscaling policies could not be read", "application-autoscaling:DescribeScalableTargets"}, "Autoscaling did not fire"},
	})
}

// TestChangeLeads: on bad-deploy the command leads with the image update that preceded the
// ITL rise, naming who made it and what it changed; without cloudtrail:LookupEvents it says
// why no change is named and the symptom leads instead.
func TestChangeLeads(t *testing.T) {
	runDiagnose(t, "bad-deploy", 10*time.Minute, []diagnoseCase{
		{"with CloudTrail", nil, []string{" 1. CRITICAL Regression after a change (UpdateInferenceComponent)", "on chat-llama-8b rose", "assumed-role/deployer/", "0.6.3 → 0.6.4"}, "warning: changes"},
		{"LookupEvents denied", []string{"cloudtrail:LookupEvents"}, []string{"warning: changes could not be read from CloudTrail", "cloudtrail:LookupEvents"}, "Regression after a change"},
	})
}

// diagnoseCase is one run of the command on a scenario: the IAM actions denied, what its
// output must say and what it must not.
type diagnoseCase struct {
	name string
	deny []string
	want []string // in stdout
	not  string
}

// runDiagnose runs each case on its own stack of scenario, the command asked after the
// given time, and checks that no secret of the stack reaches the output.
func runDiagnose(t *testing.T, scenario string, after time.Duration, cases []diagnoseCase) {
	if testing.Short() {
		t.Skip("starts the emulator stack")
	}
	bin := gobuild.Build(t, "github.com/inferscope/sagemaker-datasource/cmd/diagnose", t.TempDir(), "diagnose")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, st := diagnoseAfter(t, bin, scenario, tc.deny, after, tc.want, tc.not)
			if strings.Contains(out+errOut, st.SecretKey) || strings.Contains(out, "hf_simulatedSecret") {
				t.Fatal("a secret leaked into the output")
			}
		})
	}
}

// diagnoseAfter runs the command over the hour up to `after` past the scenario's incident
// (the AWS calls in deny refused) and checks that its output holds every want and not `not`.
func diagnoseAfter(t *testing.T, bin, scenario string, deny []string, after time.Duration, want []string, not string) (string, string, *stack.Stack) {
	t.Helper()
	st, err := stack.Start(context.Background(), stack.Options{Scenario: scenario, Seed: 42, History: 3 * time.Hour, End: stack.PinnedEnd, Deny: deny})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	at := st.Incident.Start.Add(after)
	code, out, errOut := runCommand(t, bin, map[string]string{"AWS_ACCESS_KEY_ID": st.AccessKey, "AWS_SECRET_ACCESS_KEY": st.SecretKey},
		"--url", st.URL, "--region", st.Region, "--to", at.Format(time.RFC3339), "--since", "1h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("S+%s: output lacks %q:\n%s", after, w, out)
		}
	}
	if strings.Contains(out, not) {
		t.Errorf("S+%s: output has %q:\n%s", after, not, out)
	}
	return out, errOut, st
}
