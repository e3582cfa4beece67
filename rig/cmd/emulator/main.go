// Command emulator serves a local CloudWatch PromQL API over a simulated SageMaker fleet and
// prints the Grafana data source provisioning that points our plugin at it.
//
//	emulator --scenario kv-saturation --addr 127.0.0.1:9090 --provisioning-out provisioning/datasources/inferscope-demo.yaml
//
// Several regions in one process (each its own fleet, history and control plane; a request is
// answered by the region it is signed for):
//
//	emulator --region us-east-1 --region us-west-2 --region-scenario us-east-1=ice-exhaustion --region-listeners
//	emulator --two-regions --region-scenario us-east-1=ice-exhaustion
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// Exit codes.
const (
	exitOK    = 0
	exitRun   = 1 // the stack failed at run time
	exitUsage = 2 // bad flags or a bad fleet file
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// config is everything the flags set.
type config struct {
	opts            stack.Options
	regions         []string // --region, in order
	fleetFiles      []string
	regionScenarios map[string]string
	regionListeners bool
	accountLimits   bool
	twoRegions      bool
	listScenarios   bool
	noLive          bool
	provOut         string
	// multi is the multi-region stack to start instead of opts alone: more than one region or
	// fleet file, or --region-listeners.
	multi *stack.MultiOptions
}

func newFlags(cfg *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &cfg.opts
	fs.StringVar(&o.Scenario, "scenario", "healthy", "incident the simulated fleet plays in its last 90 minutes (see --list-scenarios)")
	fs.BoolVar(&cfg.listScenarios, "list-scenarios", false, "print the scenarios with what each shows, then exit")
	fs.Func("fleet", "fleet YAML file (format: examples/fleet.yaml); empty uses the embedded default fleet. Repeat it to serve each file's region", func(v string) error {
		cfg.fleetFiles = append(cfg.fleetFiles, v)
		return nil
	})
	fs.Int64Var(&o.Seed, "seed", 1, "random seed; the same fleet, scenario and seed give the same series")
	fs.DurationVar(&o.History, "history", 6*time.Hour, "simulated history to backfill up to now (at most 168h)")
	fs.DurationVar(&o.Step, "step", time.Minute, "sample interval, like SageMaker's MetricPublishFrequencyInSeconds (at least 1s)")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:9090", "loopback address to listen on; port 0 picks a free port")
	fs.Func("region", "AWS region the emulator answers for (requests must be signed for it); empty: the fleet file's region:. Repeat it to serve several regions (the default fleet in each region no --fleet file names)", func(v string) error {
		cfg.regions = append(cfg.regions, strings.TrimSpace(v))
		return nil
	})
	fs.Func("region-scenario", "REGION=SCENARIO: the scenario one region plays when several are served (others play --scenario); repeatable", func(v string) error {
		region, scenario, ok := strings.Cut(v, "=")
		if !ok || region == "" || scenario == "" {
			return errors.New("use REGION=SCENARIO, for example us-east-1=ice-exhaustion")
		}
		cfg.regionScenarios[strings.TrimSpace(region)] = strings.TrimSpace(scenario)
		return nil
	})
	fs.BoolVar(&cfg.twoRegions, "two-regions", false, "serve fleet.TwoRegions: the default fleet in us-east-1 and us-west-2, each region holding endpoints of two accounts (111111111111, 222222222222), as the regions tests do")
	fs.BoolVar(&cfg.regionListeners, "region-listeners", false, "also serve each region on its own loopback port, answering only requests signed for it (printed as jsonData.regionEndpoints)")
	fs.BoolVar(&cfg.accountLimits, "account-limits", false, "enforce CloudWatch's PromQL rate and concurrency limits once per AWS account across every region served, as AWS counts them per account; without it each region has its own")
	fs.StringVar(&o.AccessKey, "access-key", "", "access key id clients must sign with; empty generates a pair")
	fs.StringVar(&o.SecretKey, "secret-key", "", "secret access key for --access-key")
	fs.BoolVar(&cfg.noLive, "no-live", false, "stop after the backfill: serve a frozen history instead of appending a step every --step")
	fs.StringVar(&cfg.provOut, "provisioning-out", "", "also write the data source provisioning YAML to this file (once the API is up)")
	fs.BoolVar(&o.NameValuesDisabled, "name-values-disabled", false, "answer 404 to /api/v1/label/__name__/values, as one field report saw CloudWatch do")
	fs.Func("deny", "answer AccessDenied to these IAM actions, comma-separated or repeated (e.g. sagemaker:ListEndpoints,cloudwatch:DescribeAlarms)", func(v string) error {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.Deny = append(o.Deny, a)
			}
		}
		return nil
	})
	f := &o.Faults
	fs.Float64Var(&f.TPS, "fault-tps", 0, "answer 422 (throttled) to requests beyond N per second; 0 is off")
	fs.IntVar(&f.Concurrency, "fault-concurrency", 0, "answer 429 to requests beyond M in flight; 0 is off")
	fs.DurationVar(&f.Latency, "fault-latency", 0, "add this latency to every request")
	fs.Float64Var(&f.ErrorRate, "fault-error-rate", 0, "fraction (0-1) of requests answered with 503")
	fs.Float64Var(&f.TruncateRate, "fault-truncate-rate", 0, "fraction (0-1) of responses cut off half way")
	fs.Float64Var(&f.MalformedRate, "fault-malformed-rate", 0, "fraction (0-1) of 200 responses with a body that is not JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: emulator [flags]

Serves CloudWatch's PromQL API (/api/v1/query, query_range, series, labels, label/<name>/values),
CloudWatch DescribeAlarms/DescribeAlarmContributors/DescribeAlarmHistory over the fleet's PromQL
alarms, SageMaker's endpoint and inference component calls, CloudTrail LookupEvents over the
scenario's change history and STS GetCallerIdentity (the fleet's account) on a loopback port over a
simulated SageMaker inference fleet, with SigV4 verification, and prints the Grafana provisioning
for the %s plugin.

Flags:
`, models.PluginID)
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nExit status: 0 on interrupt, 1 if the emulator fails, 2 for bad flags or a bad fleet file.\n")
	}
	return fs
}

var errFlagReported = errors.New("bad flag")

// parse reads the flags; a usage error is returned with the flag it concerns.
func parse(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{regionScenarios: map[string]string{}}
	fs := newFlags(cfg, stderr)
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			err = errFlagReported // the flag package printed it with the usage
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every option is a flag (see --help)", fs.Arg(0))
	}
	cfg.opts.Live = !cfg.noLive
	if cfg.accountLimits {
		cfg.opts.Accounts = &emulator.Accounts{}
	}
	f := cfg.opts.Faults
	for name, r := range map[string]float64{"fault-error-rate": f.ErrorRate, "fault-truncate-rate": f.TruncateRate, "fault-malformed-rate": f.MalformedRate} {
		if !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("--%s %v: use a fraction between 0 and 1", name, r)
		}
	}
	if f.TPS < 0 || f.Concurrency < 0 || f.Latency < 0 {
		return nil, errors.New("--fault-tps, --fault-concurrency and --fault-latency must not be negative")
	}
	var fleets []*fleet.Fleet
	for _, path := range cfg.fleetFiles {
		f, err := fleet.Load(path)
		if err != nil {
			return nil, fmt.Errorf("--fleet %s:\n%w", path, err)
		}
		fleets = append(fleets, f)
	}
	if cfg.twoRegions {
		if len(cfg.regions)+len(fleets) > 0 {
			return nil, errors.New("--two-regions names its own regions and fleets; leave out --region and --fleet")
		}
		fleets = fleet.TwoRegions()
	}
	if len(cfg.regions) <= 1 && len(fleets) <= 1 && !cfg.regionListeners {
		if len(cfg.regions) == 1 {
			cfg.opts.Region = cfg.regions[0]
		}
		if len(fleets) == 1 {
			cfg.opts.Fleet = fleets[0]
		}
		if len(cfg.regionScenarios) > 0 {
			return nil, errors.New("--region-scenario: one region is served; use --scenario")
		}
		return cfg, nil
	}
	m, err := multiOptions(cfg.opts, cfg.regions, fleets, cfg.regionScenarios)
	if err != nil {
		return nil, err
	}
	m.RegionListeners = cfg.regionListeners
	cfg.multi = m
	return cfg, nil
}

// multiOptions lays out the regions: each fleet file serves its own region, and each --region
// no file names serves the default fleet moved there; the order is the flags' (files first).
func multiOptions(base stack.Options, regions []string, fleets []*fleet.Fleet, scenarios map[string]string) (*stack.MultiOptions, error) {
	m := &stack.MultiOptions{Options: base}
	named := map[string]bool{}
	for _, f := range fleets {
		if named[f.Region] {
			return nil, fmt.Errorf("--fleet: two fleet files are in region %s; serve one fleet per region (endpoints can name their own account:)", f.Region)
		}
		named[f.Region] = true
		m.Regions = append(m.Regions, stack.Region{Fleet: f})
	}
	for _, r := range regions {
		if r == "" || named[r] {
			continue
		}
		named[r] = true
		m.Regions = append(m.Regions, stack.Region{Name: r})
	}
	for r, sc := range scenarios {
		if !named[r] {
			return nil, fmt.Errorf("--region-scenario %s=%s: region %s is not served; name it with --region or a --fleet file", r, sc, r)
		}
	}
	for i := range m.Regions {
		name := m.Regions[i].Name
		if f := m.Regions[i].Fleet; f != nil {
			name = f.Region
		}
		m.Regions[i].Scenario = scenarios[name]
	}
	return m, nil
}

// run is main without the process: it returns the exit code. ready, when set, receives the
// running emulator (tests use it to query and then cancel ctx).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(*served)) int {
	cfg, err := parse(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errFlagReported):
		return exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "emulator: %v\n", err)
		return exitUsage
	}
	if cfg.listScenarios {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, s := range simulator.Scenarios() {
			fmt.Fprintf(tw, "%s\t%s\n", s.Name, s.Summary)
		}
		_ = tw.Flush()
		return exitOK
	}
	sv, err := start(ctx, cfg)
	if err != nil {
		var oerr *stack.OptionError
		if errors.As(err, &oerr) {
			fmt.Fprintf(stderr, "emulator: --%s: %v\n", oerr.Option, err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "emulator: %v\n", err)
		return exitRun
	}
	defer sv.close()
	prov, err := provisioning(sv.settings())
	if err != nil {
		fmt.Fprintf(stderr, "emulator: %v\n", err)
		return exitRun
	}
	sv.describe(stderr, cfg.opts.History)
	fmt.Fprintf(stdout, "# Grafana data source provisioning for the emulator:\n%s", prov)
	if cfg.provOut != "" {
		if err := writeFileAtomic(cfg.provOut, prov); err != nil {
			fmt.Fprintf(stderr, "emulator: --provisioning-out: %v\n", err)
			return exitRun
		}
		fmt.Fprintf(stderr, "emulator: wrote %s\n", cfg.provOut)
	}
	if ready != nil {
		ready(sv)
	}
	<-ctx.Done()
	if err := sv.close(); err != nil {
		fmt.Fprintf(stderr, "emulator: live simulation stopped: %v\n", err)
		return exitRun
	}
	return exitOK
}

// served is the running emulator: one region's stack, or several behind a router.
type served struct {
	Stack *stack.Stack // single region
	Multi *stack.Multi // several regions
}

func start(ctx context.Context, cfg *config) (*served, error) {
	if cfg.multi != nil {
		m, err := stack.StartRegions(ctx, *cfg.multi)
		return &served{Multi: m}, err
	}
	st, err := stack.Start(ctx, cfg.opts)
	return &served{Stack: st}, err
}

func (sv *served) close() error {
	if sv.Multi != nil {
		return sv.Multi.Close()
	}
	return sv.Stack.Close()
}

func (sv *served) settings() (map[string]any, map[string]string) {
	if sv.Multi != nil {
		return sv.Multi.DataSourceSettings()
	}
	jd, secure := sv.Stack.DataSourceSettings()
	out := make(map[string]any, len(jd))
	for k, v := range jd {
		out[k] = v
	}
	return out, secure
}

// describe logs what is served, without the keys.
func (sv *served) describe(w io.Writer, history time.Duration) {
	if st := sv.Stack; st != nil {
		fmt.Fprintf(w, "emulator: scenario %s (seed %d): %v of history, %d series, %d samples; serving %s (region %s)\n",
			st.Scenario, st.Seed, history, st.Stats.Series, st.Stats.Samples, st.URL, st.Region)
		return
	}
	for _, st := range sv.Multi.Regions {
		where := "the router only"
		if st.URL != "" {
			where = "also " + st.URL
		}
		fmt.Fprintf(w, "emulator: region %s: scenario %s (seed %d), accounts %s: %v of history, %d series, %d samples; %s\n",
			st.Region, st.Scenario, st.Seed, strings.Join(st.Fleet.Accounts(), ", "), history, st.Stats.Series, st.Stats.Samples, where)
	}
	fmt.Fprintf(w, "emulator: serving regions %s at %s (each request answered by the region it is signed for)\n", strings.Join(sv.Multi.Names(), ", "), sv.Multi.URL)
}

// provisioning renders the Grafana data source file for the running emulator.
func provisioning(jsonData map[string]any, secureJSONData map[string]string) ([]byte, error) {
	type ds struct {
		Name           string            `yaml:"name"`
		Type           string            `yaml:"type"`
		UID            string            `yaml:"uid"`
		Access         string            `yaml:"access"`
		IsDefault      bool              `yaml:"isDefault"`
		JSONData       map[string]any    `yaml:"jsonData"`
		SecureJSONData map[string]string `yaml:"secureJsonData"`
	}
	doc := struct {
		APIVersion  int  `yaml:"apiVersion"`
		Datasources []ds `yaml:"datasources"`
	}{APIVersion: 1, Datasources: []ds{{
		Name: "SageMaker (local emulator)", Type: models.PluginID, UID: "inferscope-emulator", Access: "proxy", IsDefault: true,
		JSONData: jsonData, SecureJSONData: secureJSONData,
	}}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2) // Grafana's own provisioning examples use two spaces
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// writeFileAtomic writes via a temp file and rename, so a watcher never reads half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".provisioning-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil { // it holds the key pair
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
