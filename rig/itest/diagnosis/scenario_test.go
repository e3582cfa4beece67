package diagnosis_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/tsdb"
	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	. "github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis/awspolicy"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/awsemu"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

// httpQuerier talks to the emulator over loopback HTTP, so queries go through the same
// CloudWatch rules (metric name in every selector, 500-series limit, range limit) as in
// production.
type httpQuerier struct {
	base string
	c    *http.Client
}

func (h httpQuerier) post(ctx context.Context, path string, v url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.base+path, strings.NewReader(v.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := h.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func unix(t time.Time) string { return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64) }

func (h httpQuerier) Instant(ctx context.Context, expr string, t time.Time) (model.Vector, error) {
	st, b, err := h.post(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(t)}})
	if err != nil {
		return nil, err
	}
	if st/100 != 2 {
		return nil, fmt.Errorf("HTTP %d: %s", st, b)
	}
	return DecodeVector(bytes.NewReader(b))
}

func (h httpQuerier) Range(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	st, b, err := h.post(ctx, "/api/v1/query_range", url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
	if err != nil {
		return nil, err
	}
	if st/100 != 2 {
		return nil, fmt.Errorf("HTTP %d: %s", st, b)
	}
	return DecodeMatrix(bytes.NewReader(b))
}

// scenarioNow is the fixed end of the simulated history.
var scenarioNow = time.Date(2026, 11, 30, 14, 30, 0, 0, time.UTC)

// startStack backfills hours of f under scenario (seed 42, one-minute steps) and serves it
// through the emulator on loopback.
func startStack(t testing.TB, f *fleet.Fleet, scenario string, hours int) Querier {
	return startRegion(t, f, scenario, hours, scenarioNow).Querier
}

func startStackAt(t testing.TB, f *fleet.Fleet, scenario string, hours int, now time.Time) Querier {
	return startRegion(t, f, scenario, hours, now).Querier
}

// startRegion is startStackAt with the fleet's autoscaling policies, read as the plugin
// reads them.
func startRegion(t testing.TB, f *fleet.Fleet, scenario string, hours int, now time.Time) Region {
	t.Helper()
	sim, err := simulator.New(f, scenario, 42)
	if err != nil {
		t.Fatal(err)
	}
	return serveRegion(t, sim, f, now.Add(-time.Duration(hours)*time.Hour), now, time.Minute, emulator.Limits{})
}

// serveRegion backfills sim over [from, end] at step into a fresh TSDB and serves it through
// the emulator for the fleet's region, with "now" at end and the given limits (zero:
// CloudWatch's), as a user reaches AWS: every call SigV4-signed and verified, PromQL over
// HTTP and the autoscaling policies (with the ICs' copies) through pkg/awsapi, the plugin's
// client, from the emulator's control plane. Nothing of the fleet file reaches the
// diagnosis but what AWS would tell.
func serveRegion(t testing.TB, sim *simulator.Simulator, f *fleet.Fleet, from, end time.Time, step time.Duration, lim emulator.Limits) Region {
	t.Helper()
	opts := tsdb.DefaultOptions()
	opts.WALSegmentSize = -1
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := sim.Backfill(context.Background(), db, from, end, step); err != nil {
		t.Fatal(err)
	}
	control, err := awsemu.New(awsemu.Config{Fleet: f, Origin: sim.Origin(), Head: func() time.Time { return end }, Deployments: sim.Deployments, Changes: sim.Changes,
		LookupUnlimited: true}) // hundreds of diagnoses in a row; CloudTrail's pacing is tested in rig/awsemu and pkg/awsapi
	if err != nil {
		t.Fatal(err)
	}
	const key, secret = "AKIDDIAGNOSISTEST001", "diagnosis/test/secret/0123456789abcdefghij"
	srv, err := emulator.New(emulator.Config{Region: f.Region, Account: f.Account, Now: func() time.Time { return end }, Limits: lim, ControlPlane: control,
		Verifier: &sigv4verify.Verifier{Region: f.Region, Service: awsauth.SigningService, Credentials: map[string]sigv4verify.Credential{key: {AccessKeyID: key, SecretAccessKey: secret}}},
	}, db)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	u, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	ep, creds := awsauth.Endpoint{URL: u, Region: f.Region}, credentials.NewStaticCredentialsProvider(key, secret, "")
	signed := &http.Client{Transport: awsauth.Transport(ts.Client().Transport, creds, ep, nil)}
	return Region{Querier: httpQuerier{base: ts.URL, c: signed}, Policies: awspolicy.Source(awsapi.NewWithCredentials(creds, ep, nil), func() time.Time { return end }),
		Changes: awspolicy.Changes(awsapi.NewChanges(creds, ep, nil, awsapi.WithLookupRate(rate.Inf)))}
}

// diagnoseIn runs the diagnosis over one region, as cmd/diagnose and the plugin do.
func diagnoseIn(rg Region, scope Scope, start, end time.Time, cfg Config) (Report, error) {
	return RunRegions(context.Background(), []Region{rg}, scope, start, end, cfg)
}

// expectation: the cause ranked first for a scenario and where it must point.
// Names are those the simulator picks in the default fleet (instance ids are hashes, so only
// their endpoint is checked).
type expectation struct {
	scenario string
	rule     string
	level    Level
	name     string
	endpoint string
	severity Severity
}

var scenarioTable = []expectation{
	{"healthy", "", "", "", "", Info},
	{"kv-saturation", "kv-cache-saturation", LevelIC, "chat-llama-8b", "chat-ic", Critical},
	{"gpu-memory-leak", "gpu-memory", LevelInstance, "", "chat-ic", Critical},
	{"model-crash", "vram-drop", LevelInstance, "", "summarize", Critical},
	{"az-imbalance", "az-traffic", LevelAZ, "us-east-1c", "chat-ic", Critical},
	{"scaling-not-firing", "scaling", LevelIC, "code-llama-8b", "chat-ic", Critical},
	{"slow-cold-start", "cold-start", LevelIC, "chat-llama-8b", "chat-ic", Warning},
	{"ice-exhaustion", "ice-exhaustion", LevelInstanceType, "ml.g5.12xlarge", "chat-ic", Critical},
	{"engine-queueing", "engine-queueing", LevelIC, "chat-qwen-7b", "chat-ic", Critical},
	{"gpu-degrade", "gpu-hardware", LevelInstance, "", "chat-ic", Critical},
	{"enrichment-off", "enrichment-off", LevelAccount, "123456789012", "", Warning},
	{"bad-deploy", "change", LevelIC, "chat-llama-8b", "chat-ic", Critical},
	{"bad-config", "change", LevelEndpoint, "summarize", "summarize", Critical},
	// The deployment elsewhere changes nothing: the unrelated incident leads.
	{"benign-deploy", "engine-queueing", LevelIC, "chat-qwen-7b", "chat-ic", Critical},
}

// TestScenarioTable runs the full diagnosis on every scenario of the default fleet (3 h of
// history) and checks the top finding; -v prints the table scenario → top finding.
func TestScenarioTable(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills nine simulated fleets")
	}
	known := map[string]bool{}
	for _, s := range simulator.Scenarios() {
		known[s.Name] = true
	}
	var rows []string
	for _, x := range scenarioTable {
		if !known[x.scenario] {
			t.Errorf("scenario %s is not in the simulator any more", x.scenario)
			continue
		}
		delete(known, x.scenario)
		t.Run(x.scenario, func(t *testing.T) {
			rg := startRegion(t, fleet.Default(), x.scenario, 3, scenarioNow)
			r, err := diagnoseIn(rg, Scope{}, scenarioNow.Add(-3*time.Hour), scenarioNow, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range r.Failures {
				t.Errorf("rule %s failed: %s", f.Rule, f.Error)
			}
			top := "– | no finding above info | fleet | –"
			if len(r.Findings) > 0 {
				f := r.Findings[0]
				top = fmt.Sprintf("%s | %s | %s | %s", f.Severity, f.Cause, f.Target, f.Summary)
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %d |", x.scenario, top, r.Requests))
			t.Logf("%d requests;%s", r.Requests, describe(r.Findings))
			if r.Requests > 40 {
				t.Errorf("%d upstream requests, budget 40", r.Requests)
			}
			if x.rule == "" {
				for _, f := range r.Findings {
					if f.Severity > Info {
						t.Errorf("healthy fleet: %s %s on %s", f.Severity, f.Cause, f.Target)
					}
				}
				return
			}
			if len(r.Findings) == 0 {
				t.Fatalf("no finding, want %s", x.rule)
			}
			f := r.Findings[0]
			if f.Rule != x.rule || f.Target.Level != x.level || f.Severity != x.severity || f.Target.Endpoint != x.endpoint || (x.name != "" && f.Target.Name != x.name) {
				t.Fatalf("top finding is %s/%s on %s, want %s/%s on %s %s (%s)", f.Rule, f.Severity, f.Target, x.rule, x.severity, x.level, x.name, x.endpoint)
			}
			if len(f.Evidence) == 0 || f.Evidence[0].Query == "" || f.Evidence[0].Value == "" || f.PanelLink == "" || f.Next == "" {
				t.Fatalf("top finding lacks evidence, next step or link: %+v", f)
			}
			if x.rule == "enrichment-off" && !strings.Contains(f.Summary, semconv.EnrichmentSwitch) {
				t.Fatalf("enrichment-off does not name the switch to turn on: %s", f.Summary)
			}
			// Without the policies (credentials without the Application Auto Scaling
			// permission) the same cause leads.
			r2, err := diagnoseIn(Region{Querier: rg.Querier, Changes: rg.Changes}, Scope{}, scenarioNow.Add(-3*time.Hour), scenarioNow, DefaultConfig())
			if err != nil || len(r2.Findings) == 0 || r2.Findings[0].Rule != x.rule || r2.Findings[0].Target != f.Target {
				t.Fatalf("without the scaling policies the top finding changes:%s", describe(r2.Findings))
			}
		})
	}
	for s := range known {
		t.Errorf("scenario %s has no expectation in scenarioTable", s)
	}
	t.Logf("\n| scenario | severity | top finding | scope | summary | requests |\n|---|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
	if path := os.Getenv("DIAGNOSIS_TABLE"); path != "" {
		_ = os.WriteFile(path, []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	}
}

// TestHealthyAroundTheClock: the healthy fleet's diurnal load, bursts and autoscaling at
// any hour must not look like an incident, with the policies read or not.
func TestHealthyAroundTheClock(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills several simulated fleets")
	}
	for h := 0; h < 24; h += 2 {
		now := time.Date(2026, 12, 1, h, 0, 0, 0, time.UTC)
		t.Run(now.Format("15:04"), func(t *testing.T) {
			// Each hour has its own stack.
			t.Parallel()
			rg := startRegion(t, fleet.Default(), "healthy", 9, now) // 6 h before the range: the scaling baseline
			for _, policies := range []PolicySource{nil, rg.Policies} {
				r, err := diagnoseIn(Region{Querier: rg.Querier, Policies: policies}, Scope{}, now.Add(-3*time.Hour), now, DefaultConfig())
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range r.Findings {
					if f.Severity > Info {
						t.Errorf("healthy fleet at %s (policies read: %v):%s", now.Format("15:04"), policies != nil, describe(r.Findings))
						break
					}
				}
			}
		})
	}
}

// TestScenarioRanges: the same causes lead for the ranges people pick (the CLI's default 1 h,
// the demo's 2 h, the dashboards' 6 h) over 6 h of history, with no scaling targets (the
// dashboard panel's case) and the changes CloudTrail has.
func TestScenarioRanges(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills nine simulated fleets")
	}
	for _, x := range scenarioTable {
		t.Run(x.scenario, func(t *testing.T) {
			t.Parallel() // each scenario has its own stack
			rg := startRegion(t, fleet.Default(), x.scenario, 6, scenarioNow)
			for _, rng := range []time.Duration{time.Hour, 2 * time.Hour, 6 * time.Hour} {
				r, err := diagnoseIn(Region{Querier: rg.Querier, Changes: rg.Changes}, Scope{}, scenarioNow.Add(-rng), scenarioNow, DefaultConfig())
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case x.rule == "":
					if len(r.Findings) > 0 && r.Findings[0].Severity > Info {
						t.Errorf("healthy over %s:%s", rng, describe(r.Findings))
					}
				case len(r.Findings) == 0 || r.Findings[0].Rule != x.rule || r.Findings[0].Target.Level != x.level:
					t.Errorf("over %s the top finding is not %s on a %s:%s", rng, x.rule, x.level, describe(r.Findings))
				}
			}
		})
	}
}

// TestScenarioScopes: narrowing the scope keeps the cause when it is inside and drops it when
// it is not (the dashboards' fleet → endpoint → IC drill-down).
func TestScenarioScopes(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills a simulated fleet")
	}
	q := startStack(t, fleet.Default(), "kv-saturation", 3)
	cases := []struct {
		scope Scope
		want  string // top rule; "" = nothing above info
	}{
		{Scope{}, "kv-cache-saturation"},
		{Scope{Endpoint: "chat-ic"}, "kv-cache-saturation"},
		{Scope{Endpoint: "chat-ic", InferenceComponent: "chat-llama-8b"}, "kv-cache-saturation"},
		{Scope{InferenceComponent: "chat-llama-8b"}, "kv-cache-saturation"},
		{Scope{Endpoint: "summarize"}, ""},
		{Scope{Endpoint: "chat-ic", InferenceComponent: "chat-qwen-7b"}, ""},
	}
	for _, c := range cases {
		t.Run(c.scope.String(), func(t *testing.T) {
			r, err := Run(context.Background(), q, c.scope, scenarioNow.Add(-3*time.Hour), scenarioNow, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range r.Failures {
				t.Errorf("rule %s failed: %s", f.Rule, f.Error)
			}
			if c.want == "" {
				if len(r.Findings) > 0 && r.Findings[0].Severity > Info {
					t.Fatalf("nothing above info expected in %s:%s", c.scope, describe(r.Findings))
				}
				return
			}
			if len(r.Findings) == 0 || r.Findings[0].Rule != c.want || r.Findings[0].Target.Name != "chat-llama-8b" {
				t.Fatalf("want %s on chat-llama-8b first:%s", c.want, describe(r.Findings))
			}
			for _, f := range r.Findings {
				if c.scope.Endpoint != "" && f.Target.Endpoint != "" && f.Target.Endpoint != c.scope.Endpoint {
					t.Errorf("finding outside the scope: %s on %s", f.Cause, f.Target)
				}
			}
		})
	}
}
