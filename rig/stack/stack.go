// Package stack assembles the local CloudWatch stand-in: a Prometheus TSDB in a temp dir, the
// fleet simulator (backfilled history, then live samples) and the emulator's HTTP API with
// SigV4 verification, on a loopback listener. Plugin, dashboard and diagnosis tests start one
// with Start; cmd/emulator serves one to a user.
package stack

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/prometheus/tsdb"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/rig/awsemu"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

// Options configure a stack; zero fields take the defaults noted.
type Options struct {
	Scenario  string        // "healthy"
	Seed      int64         // 0 is a valid seed
	History   time.Duration // 6h; backfilled up to now
	Step      time.Duration // 60s, the SageMaker publish frequency
	Addr      string        // "127.0.0.1:0"; must be a loopback address
	Region    string        // the fleet's region, else "us-east-1"
	AccessKey string        // generated when both keys are empty
	SecretKey string
	Fleet     *fleet.Fleet // fleet.Default()
	Live      bool         // keep appending one step every Step
	// End is where the backfilled history stops (zero: now). Tests that read the fleet's
	// diurnal load pin it, so what they see does not depend on the hour CI runs at.
	End    time.Time
	Faults emulator.Faults
	// Limits are CloudWatch's; the zero value is the real ones (300 query and 10 discovery
	// TPS, 30 of each in flight).
	Limits emulator.Limits
	// Accounts, when set, makes the fleet's monitoring account enforce Limits' rates and
	// concurrency once across every region, stack and listener given the same registry, as
	// CloudWatch counts them per account (Stack.Account reads what they answered). Nil: each
	// region has gates of its own.
	Accounts *emulator.Accounts
	// NameValuesDisabled answers 404 to /api/v1/label/__name__/values, as one field report
	// saw CloudWatch do.
	NameValuesDisabled bool
	// Deny answers AccessDenied to these control-plane IAM actions (e.g.
	// "sagemaker:ListEndpoints"), to test permission paths.
	Deny []string
}

// PinnedEnd is the history end that scenario tests share: the simulated load follows the
// hour of day, and a fixed hour keeps every test run reading the same fleet.
var PinnedEnd = time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)

// Stack is a running emulator with its simulated fleet.
type Stack struct {
	URL       string // http://127.0.0.1:PORT
	Region    string
	AccessKey string
	SecretKey string
	End       time.Time     // end of the backfilled history
	Step      time.Duration // one sample per series per Step (the publish frequency)
	Stats     simulator.Stats
	DB        *tsdb.DB
	Fleet     *fleet.Fleet // what the region serves
	Scenario  string
	Seed      int64
	Incident  simulator.Incident // where the scenario played

	dir     string
	arrival arrival      // the TSDB as queries see it (SetArrived)
	handler http.Handler // the emulator behind the counters
	control emulator.ControlPlane
	counts  counters
	account *emulator.Account
	srv     *http.Server // nil when only a multi-region router serves this region
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	once    sync.Once
	runErr  error
}

func (o *Options) defaults() error {
	if o.Scenario == "" {
		o.Scenario = "healthy"
	}
	if o.History == 0 {
		o.History = 6 * time.Hour
	}
	if o.Step == 0 {
		o.Step = time.Minute
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Fleet == nil {
		o.Fleet = fleet.Default()
	}
	if o.Region == "" {
		o.Region = o.Fleet.Region // the region the fleet file says it runs in
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	known := false
	for _, sc := range simulator.Scenarios() {
		known = known || sc.Name == o.Scenario
	}
	switch {
	case !known:
		return &OptionError{"scenario", fmt.Sprintf("unknown scenario %q; list them with --list-scenarios", o.Scenario)}
	case o.Step < time.Second:
		return &OptionError{"step", fmt.Sprintf("step %v is below 1s", o.Step)}
	case o.History < o.Step:
		return &OptionError{"history", fmt.Sprintf("history %v is shorter than one step (%v)", o.History, o.Step)}
	case o.History > 7*24*time.Hour:
		return &OptionError{"history", fmt.Sprintf("history %v is longer than CloudWatch's 7-day query range; use at most 168h", o.History)}
	case o.Live && !o.End.IsZero():
		return &OptionError{"no-live", "a pinned end time cannot keep appending live; drop End or Live"}
	case (o.AccessKey == "") != (o.SecretKey == ""):
		return &OptionError{"access-key", "give both the access key and the secret key, or neither to generate a pair"}
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return &OptionError{"addr", fmt.Sprintf("address %q: %v; use host:port such as 127.0.0.1:9090", o.Addr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return &OptionError{"addr", fmt.Sprintf("address %q is not a loopback address; the emulator only listens on 127.0.0.1 or ::1", o.Addr)}
	}
	if o.AccessKey == "" {
		o.AccessKey, o.SecretKey = generateKeys()
	}
	return nil
}

// OptionError is a bad option; Option is its flag name in cmd/emulator.
type OptionError struct{ Option, Problem string }

func (e *OptionError) Error() string { return e.Problem }

// generateKeys returns an AWS-shaped key pair (AKIA + 16, and 40 characters).
func generateKeys() (string, string) {
	const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	const mixed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	pick := func(alphabet string, n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		return string(b)
	}
	return "AKIA" + pick(upper, 16), pick(mixed, 40)
}

// Start backfills History of the fleet up to End (default now), then serves the emulator. With Live set
// it keeps appending one step every Step until Close.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	st, err := build(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := st.listen(opts.Addr); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// build assembles one region: TSDB, backfilled simulator (live when asked), control plane and
// emulator behind its request counters. It does not listen.
func build(ctx context.Context, opts Options) (*Stack, error) {
	sim, err := simulator.New(opts.Fleet, opts.Scenario, opts.Seed)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "inferscope-emulator-")
	if err != nil {
		return nil, fmt.Errorf("temp dir for the TSDB: %w", err)
	}
	st := &Stack{Region: opts.Region, AccessKey: opts.AccessKey, SecretKey: opts.SecretKey, Step: opts.Step,
		Fleet: opts.Fleet, Scenario: opts.Scenario, Seed: opts.Seed, Incident: sim.Incident(), dir: dir}
	fail := func(err error) (*Stack, error) {
		st.Close()
		return nil, err
	}
	dbOpts := tsdb.DefaultOptions()
	dbOpts.WALSegmentSize = -1 // throwaway data: no write-ahead log
	dbOpts.RetentionDuration = (opts.History + 24*time.Hour).Milliseconds()
	if st.DB, err = tsdb.Open(dir, nil, nil, dbOpts, nil); err != nil {
		return fail(fmt.Errorf("open TSDB: %w", err))
	}
	st.End = opts.End
	if st.End.IsZero() {
		st.End = time.Now()
	}
	st.End = st.End.Truncate(opts.Step)
	// Instant queries without a time answer at the end of the history, like "now" on AWS.
	emulatorNow := time.Now
	if !opts.End.IsZero() {
		emulatorNow = func() time.Time { return st.End }
	}
	if st.Stats, err = sim.Backfill(ctx, st.DB, st.End.Add(-opts.History), st.End, opts.Step); err != nil {
		return fail(fmt.Errorf("backfill: %w", err))
	}
	st.Incident = sim.Incident() // its Start is known once the history is there
	db := st.DB
	st.arrival.Queryable = db
	st.arrival.set(time.Time{})
	control, err := awsemu.New(awsemu.Config{
		Fleet:       opts.Fleet,
		Origin:      sim.Origin(),
		Head:        func() time.Time { return time.UnixMilli(db.Head().MaxTime()).UTC() },
		Deployments: sim.Deployments,
		Changes:     sim.Changes,
	})
	if err != nil {
		return fail(err)
	}
	st.control = control
	srv, err := emulator.New(emulator.Config{
		Region:       opts.Region,
		Account:      opts.Fleet.Account,
		Accounts:     opts.Accounts,
		ControlPlane: control,
		Deny:         opts.Deny,
		Now:          emulatorNow,
		Verifier: &sigv4verify.Verifier{
			Region: opts.Region, Service: awsauth.SigningService,
			Credentials: map[string]sigv4verify.Credential{opts.AccessKey: {AccessKeyID: opts.AccessKey, SecretAccessKey: opts.SecretKey}},
		},
		Verified:           st.counts.verified,
		Limits:             opts.Limits,
		Faults:             opts.Faults,
		NameValuesDisabled: opts.NameValuesDisabled,
	}, &st.arrival)
	var denyErr *emulator.DenyError
	if errors.As(err, &denyErr) {
		return fail(&OptionError{"deny", denyErr.Error()})
	}
	if err != nil {
		return fail(err)
	}
	st.account = srv.Account()
	st.handler = st.counts.count(srv)
	runCtx, cancel := context.WithCancel(context.Background())
	st.cancel = cancel
	if opts.Live {
		st.wg.Add(1)
		go func() {
			defer st.wg.Done()
			st.runErr = sim.Run(runCtx, st.DB, opts.Step)
		}()
	}
	return st, nil
}

// listen serves the stack's own handler on addr and sets URL.
func (s *Stack) listen(addr string) error {
	srv, url, err := serve(&s.wg, addr, s.handler)
	if err != nil {
		return err
	}
	s.srv, s.URL = srv, url
	return nil
}

// serve runs h on a new listener at addr until the returned server is closed.
func serve(wg *sync.WaitGroup, addr string, h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return srv, "http://" + ln.Addr().String(), nil
}

// Counts are the requests one region's emulator received and how their signatures fared.
func (s *Stack) Counts() Counts { return s.counts.read() }

// Account is the account whose CloudWatch limits this region enforces, with what they
// answered: shared with the other regions and stacks of Options.Accounts, else the region's own.
func (s *Stack) Account() *emulator.Account { return s.account }

// Discovery returns the discovery requests (series, labels, label values) the emulator
// answered since t, oldest first: at most the latest 4096.
func (s *Stack) Discovery(since time.Time) []DiscoveryRequest { return s.counts.discovery.since(since) }

// DataSourceSettings are the jsonData and secureJsonData of a data source that uses this
// stack: static keys, the stack's region, its URL as the endpoint and, as min step, the
// spacing of the samples it publishes.
func (s *Stack) DataSourceSettings() (jsonData, secureJSONData map[string]string) {
	jsonData = map[string]string{"authType": "keys", "defaultRegion": s.Region, "endpoint": s.URL}
	if s.Step > 0 {
		jsonData["timeInterval"] = fmt.Sprintf("%ds", int64(s.Step/time.Second))
	}
	return jsonData, map[string]string{"accessKey": s.AccessKey, "secretKey": s.SecretKey}
}

// Close stops live appending and the server and deletes the TSDB. It returns the live
// simulator's error, if it stopped on one.
func (s *Stack) Close() error {
	s.once.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		if s.srv != nil {
			_ = s.srv.Close()
		}
		s.wg.Wait()
		if s.DB != nil {
			_ = s.DB.Close()
		}
		_ = os.RemoveAll(s.dir)
	})
	return s.runErr
}
