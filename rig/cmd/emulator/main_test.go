package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// gpuQuery sends a GPU-utilisation query to url signed for region and returns the status
// (0 after a transport error, which it reports).
func gpuQuery(t *testing.T, url, key, secret, region string) int {
	t.Helper()
	c := &http.Client{Transport: awsauth.NewSigner(http.DefaultTransport,
		credentials.NewStaticCredentialsProvider(key, secret, ""), region, awsauth.SigningService, nil)}
	resp, err := c.Get(url + "/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL")
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestFlagErrorsExitTwoAndNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	badFleet := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(badFleet, []byte("account: \"123456789012\"\nregion: us-east-1\nmodels:\n  - name: m\n    weights_mib: -1\nendpoints: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--bogus"}, []string{"flag provided but not defined: -bogus", "Usage: emulator"}},
		{[]string{"--history", "soon"}, []string{`invalid value "soon" for flag -history`}},
		{[]string{"--scenario", "meltdown", "--addr", "127.0.0.1:0"}, []string{"--scenario", `unknown scenario "meltdown"`, "--list-scenarios"}},
		{[]string{"--addr", "0.0.0.0:9090"}, []string{"--addr", "not a loopback address"}},
		{[]string{"--access-key", "AKIAX", "--addr", "127.0.0.1:0"}, []string{"--access-key", "both the access key and the secret key"}},
		{[]string{"--history", "200h", "--addr", "127.0.0.1:0"}, []string{"--history", "7-day"}},
		{[]string{"--fault-error-rate", "1.5"}, []string{"--fault-error-rate 1.5", "between 0 and 1"}},
		{[]string{"--fleet", badFleet}, []string{badFleet + ":5: models[0].weights_mib", "greater than zero"}},
		{[]string{"--fleet", filepath.Join(dir, "missing.yaml")}, []string{"--fleet", "no such file"}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"--region-scenario", "us-east-1"}, []string{"use REGION=SCENARIO"}},
		{[]string{"--two-regions", "--region", "eu-west-1"}, []string{"--two-regions names its own regions and fleets"}},
		{[]string{"--region-scenario", "us-east-1=kv-saturation"}, []string{"--region-scenario: one region is served; use --scenario"}},
		{[]string{"--region", "us-east-1", "--region", "us-west-2", "--region-scenario", "eu-west-1=kv-saturation"}, []string{"region eu-west-1 is not served"}},
		{[]string{"--fleet", "../../fleet/default.yaml", "--fleet", "../../fleet/default.yaml"}, []string{"two fleet files are in region us-east-1"}},
		{[]string{"--region", "us-east1", "--region", "us-west-2", "--addr", "127.0.0.1:0"}, []string{"--region", `"us-east1" is not an AWS region name`}},
		{[]string{"--deny", "sagemaker:DeleteEndpoint", "--addr", "127.0.0.1:0", "--history", "10m", "--no-live"},
			[]string{"--deny", `cannot deny "sagemaker:DeleteEndpoint"`, "sagemaker:ListEndpoints"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), tt.args, &out, &errb, nil); code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitUsage, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q does not contain %q", errb.String(), w)
				}
			}
		})
	}
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, &out, &errb, nil); code != exitOK {
		t.Fatalf("--help exit %d", code)
	}
	for _, f := range []string{"scenario", "list-scenarios", "fleet", "seed", "history", "step", "addr", "region", "access-key", "secret-key", "no-live", "provisioning-out", "name-values-disabled",
		"region-scenario", "region-listeners", "account-limits", "two-regions", "fault-tps", "fault-concurrency", "fault-latency", "fault-error-rate", "fault-truncate-rate", "fault-malformed-rate"} {
		if !strings.Contains(errb.String(), "-"+f+" ") && !strings.Contains(errb.String(), "-"+f+"\n") {
			t.Errorf("--help does not document -%s", f)
		}
	}
}

func TestListScenarios(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--list-scenarios"}, &out, &errb, nil); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"healthy", "kv-saturation", "engine-queueing", "ice-exhaustion"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("list lacks %s: %s", s, out.String())
		}
	}
}

// The printed provisioning is valid YAML for our plugin with the stack's endpoint and keys,
// and --provisioning-out writes the same document.
func TestPrintsAndWritesProvisioning(t *testing.T) {
	provPath := filepath.Join(t.TempDir(), "ds.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	var st *stack.Stack
	code := run(ctx, []string{"--addr", "127.0.0.1:0", "--history", "1h", "--no-live", "--region", "eu-west-1",
		"--access-key", "AKIAEMULATORTEST0001", "--secret-key", "s3cr3t/emulator+key", "--provisioning-out", provPath}, &out, &errb,
		func(sv *served) { st = sv.Stack; cancel() })
	if code != exitOK || st == nil {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Type           string            `yaml:"type"`
			JSONData       map[string]string `yaml:"jsonData"`
			SecureJSONData map[string]string `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("stdout is not YAML: %v\n%s", err, out.String())
	}
	if doc.APIVersion != 1 || len(doc.Datasources) != 1 {
		t.Fatalf("provisioning: %+v", doc)
	}
	d := doc.Datasources[0]
	if d.Type != "inferscope-sagemaker-datasource" || d.JSONData["authType"] != "keys" || d.JSONData["defaultRegion"] != "eu-west-1" ||
		d.JSONData["endpoint"] != st.URL || !strings.HasPrefix(st.URL, "http://127.0.0.1:") ||
		d.SecureJSONData["accessKey"] != "AKIAEMULATORTEST0001" || d.SecureJSONData["secretKey"] != "s3cr3t/emulator+key" {
		t.Errorf("provisioning: %+v (stack at %s)", d, st.URL)
	}
	written, err := os.ReadFile(provPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), string(written)) {
		t.Errorf("written file differs from the printed provisioning:\n%s", written)
	}
	if strings.Contains(errb.String(), "s3cr3t") {
		t.Errorf("the secret key leaked into the log: %s", errb.String())
	}
}

// Fault flags reach the emulator: with an error rate of 1 every signed request gets 503.
func TestFaultFlagsReachTheEmulator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	status := 0
	code := run(ctx, []string{"--addr", "127.0.0.1:0", "--history", "10m", "--no-live", "--fault-error-rate", "1"}, &out, &errb,
		func(sv *served) {
			defer cancel()
			st := sv.Stack
			status = gpuQuery(t, st.URL, st.AccessKey, st.SecretKey, st.Region)
		})
	if code != exitOK || status != http.StatusServiceUnavailable {
		t.Errorf("exit %d, status %d (want 0, 503); stderr: %s", code, status, errb.String())
	}
}

// --deny, comma-separated or repeated, makes the named actions AccessDenied and leaves the others.
func TestDenyFlagReachesTheEmulator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	got := map[string]string{}
	code := run(ctx, []string{"--addr", "127.0.0.1:0", "--history", "10m", "--no-live",
		"--deny", "sagemaker:ListEndpoints, cloudwatch:DescribeAlarms", "--deny", "sagemaker:DescribeEndpoint"}, &out, &errb,
		func(sv *served) {
			st := sv.Stack
			defer cancel()
			c := &http.Client{Transport: awsauth.NewSigner(http.DefaultTransport,
				credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), st.Region, "sagemaker", nil)}
			for _, op := range []string{"ListEndpoints", "DescribeEndpoint", "ListInferenceComponents"} {
				req, _ := http.NewRequest(http.MethodPost, st.URL+"/", strings.NewReader(`{"EndpointName":"chat-ic"}`))
				req.Header.Set("X-Amz-Target", "SageMaker."+op)
				req.Header.Set("Content-Type", "application/x-amz-json-1.1")
				resp, err := c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				got[op] = fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
			}
		})
	want := map[string]string{"ListEndpoints": "400 AccessDeniedException", "DescribeEndpoint": "400 AccessDeniedException", "ListInferenceComponents": "200 "}
	if code != exitOK || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("exit %d, answers %v, want %v; stderr: %s", code, got, want, errb.String())
	}
}

// The emulator answers for the region the fleet file names (a client of a us-west-2 fleet
// signs for us-west-2), unless --region overrides it.
func TestRegionComesFromTheFleetFile(t *testing.T) {
	doc, err := yaml.Marshal(fleet.Default().InRegion("us-west-2", ""))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "us-west-2"},
		{[]string{"--region", "eu-west-1"}, "eu-west-1"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var out, errb bytes.Buffer
		status := map[string]int{}
		code := run(ctx, append([]string{"--addr", "127.0.0.1:0", "--history", "10m", "--no-live", "--fleet", path}, c.args...), &out, &errb,
			func(sv *served) {
				st := sv.Stack
				defer cancel()
				for _, region := range []string{c.want, "us-east-1"} {
					status[region] = gpuQuery(t, st.URL, st.AccessKey, st.SecretKey, region)
				}
			})
		cancel()
		if code != exitOK || status[c.want] != http.StatusOK || status["us-east-1"] != http.StatusForbidden {
			t.Errorf("args %v: exit %d, status by signing region %v (want 200 for %s, 403 for us-east-1); stderr: %s", c.args, code, status, c.want, errb.String())
		}
	}
}

// Several regions: the provisioning names them (allowedRegions, one endpoint per region), the
// router answers each for its own signature, a region's port refuses the other's, and each
// region plays its own scenario.
func TestServesSeveralRegions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	status := map[string]int{}
	var m *stack.Multi
	code := run(ctx, []string{"--addr", "127.0.0.1:0", "--history", "20m", "--no-live", "--region", "us-east-1", "--region", "us-west-2",
		"--region-listeners", "--region-scenario", "us-west-2=ice-exhaustion", "--access-key", "AKIAEMULATORTEST0002", "--secret-key", "multi/secret"}, &out, &errb,
		func(sv *served) {
			defer cancel()
			m = sv.Multi
			for _, target := range []struct{ name, url, region string }{
				{"router us-east-1", m.URL, "us-east-1"}, {"router us-west-2", m.URL, "us-west-2"}, {"router eu-west-1", m.URL, "eu-west-1"},
				{"us-east-1 port us-east-1", m.Region("us-east-1").URL, "us-east-1"}, {"us-east-1 port us-west-2", m.Region("us-east-1").URL, "us-west-2"},
			} {
				status[target.name] = gpuQuery(t, target.url, m.AccessKey, m.SecretKey, target.region)
			}
		})
	if code != exitOK || m == nil {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := map[string]int{"router us-east-1": 200, "router us-west-2": 200, "router eu-west-1": 403, "us-east-1 port us-east-1": 200, "us-east-1 port us-west-2": 403}
	if fmt.Sprint(status) != fmt.Sprint(want) {
		t.Errorf("answers %v, want %v", status, want)
	}
	var doc struct {
		Datasources []struct {
			JSONData struct {
				DefaultRegion   string            `yaml:"defaultRegion"`
				Endpoint        string            `yaml:"endpoint"`
				AllowedRegions  []string          `yaml:"allowedRegions"`
				RegionEndpoints map[string]string `yaml:"regionEndpoints"`
			} `yaml:"jsonData"`
			SecureJSONData map[string]string `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Datasources) != 1 {
		t.Fatalf("provisioning: %v\n%s", err, out.String())
	}
	jd := doc.Datasources[0].JSONData
	if jd.DefaultRegion != "us-east-1" || jd.Endpoint != m.URL || fmt.Sprint(jd.AllowedRegions) != "[us-east-1 us-west-2]" ||
		jd.RegionEndpoints["us-east-1"] != m.Region("us-east-1").URL || jd.RegionEndpoints["us-west-2"] != m.Region("us-west-2").URL ||
		doc.Datasources[0].SecureJSONData["secretKey"] != "multi/secret" {
		t.Errorf("provisioning %+v does not match the emulator at %s", jd, m.URL)
	}
	for _, w := range []string{"region us-east-1: scenario healthy (seed 1)", "region us-west-2: scenario ice-exhaustion (seed 2)", "serving regions us-east-1, us-west-2 at " + m.URL} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, errb.String())
		}
	}
	if strings.Contains(errb.String(), "multi/secret") {
		t.Errorf("the secret key leaked into the log")
	}
}

// A fleet file per region: each region serves its own file's endpoints; --two-regions the same.
func TestFleetFilePerRegion(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for _, f := range fleet.TwoRegions() {
		doc, err := yaml.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, f.Region+".yaml")
		if err := os.WriteFile(path, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--fleet", path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	got := map[string]string{}
	code := run(ctx, append(args, "--addr", "127.0.0.1:0", "--history", "10m", "--no-live"), &out, &errb, func(sv *served) {
		defer cancel()
		for _, st := range sv.Multi.Regions {
			got[st.Region] = fmt.Sprint(st.Fleet.Endpoints[0].Name, " ", st.Fleet.Accounts())
		}
	})
	want := map[string]string{"us-east-1": "chat-ic [111111111111 222222222222]", "us-west-2": "chat-ic-west [111111111111 222222222222]"}
	if code != exitOK || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("exit %d, regions %v, want %v; stderr: %s", code, got, want, errb.String())
	}
	// --two-regions serves the same layout without files.
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	preset := map[string]string{}
	code = run(ctx, []string{"--two-regions", "--addr", "127.0.0.1:0", "--history", "10m", "--no-live"}, &out, &errb, func(sv *served) {
		defer cancel()
		for _, st := range sv.Multi.Regions {
			preset[st.Region] = fmt.Sprint(st.Fleet.Endpoints[0].Name, " ", st.Fleet.Accounts())
		}
	})
	if code != exitOK || fmt.Sprint(preset) != fmt.Sprint(want) {
		t.Errorf("--two-regions: exit %d, regions %v, want %v; stderr: %s", code, preset, want, errb.String())
	}
}

// --account-limits makes the regions of the monitoring account enforce one set of limits;
// without it each region has its own.
func TestAccountLimitsFlagSharesTheGates(t *testing.T) {
	for _, shared := range []bool{true, false} {
		args := []string{"--two-regions", "--addr", "127.0.0.1:0", "--history", "10m", "--no-live"}
		if shared {
			args = append(args, "--account-limits")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var out, errb bytes.Buffer
		same := !shared
		code := run(ctx, args, &out, &errb, func(sv *served) {
			defer cancel()
			same = sv.Multi.Regions[0].Account() == sv.Multi.Regions[1].Account()
		})
		cancel()
		if code != exitOK || same != shared {
			t.Errorf("--account-limits %v: exit %d, regions share their gates: %v; stderr: %s", shared, code, same, errb.String())
		}
	}
}
