// Command pluginhost is the browser tests' stand-in for Grafana's server: it starts the
// emulator stack with a scenario, launches the built plugin binary and speaks the plugin
// protocol to it, and serves on loopback the API the frontend calls through getBackendSrv()
// (rig/pluginhost) plus the test page.
//
//	go build -o /tmp/gpx ./pkg && go -C rig run ./cmd/pluginhost --plugin /tmp/gpx --page e2e/dist
//
// It prints "pluginhost: serving http://127.0.0.1:PORT" once ready and stops on SIGINT/SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/pluginhost"
	"github.com/inferscope/sagemaker-datasource/rig/pluginproc"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "pluginhost: %v\n", err)
		}
		os.Exit(2)
	}
}

// The data sources the host serves, all provisioned against the stack: the editors' tests
// use "sagemaker"; the config editor test saves over "config", so it cannot break the others.
var sourceUIDs = []string{"sagemaker", "config"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pluginhost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pluginBin := fs.String("plugin", "", "the built plugin binary ("+pluginproc.BinaryName+"); required")
	page := fs.String("page", "", "folder served at / (the test page bundle); empty serves none")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on; port 0 picks a free port")
	opts := stack.Options{}
	fs.StringVar(&opts.Scenario, "scenario", "healthy", "incident the simulated fleet plays (rig/simulator/SCENARIOS.md)")
	fs.Int64Var(&opts.Seed, "seed", 1, "random seed of the simulated fleet")
	fs.DurationVar(&opts.History, "history", 2*time.Hour, "simulated history backfilled up to now")
	generated := fs.Int("generated-instances", 0, "also write this many generated instances of "+generatedMetric+" (a label with that many values)")
	nFilter := fs.Int("filter-values", 12, "series of "+filterMetric+" whose "+filterLabel+" holds quotes, backslashes, newlines and UTF-8 (generated from --seed)")
	tagsSeed := fs.Int64("tags-seed", -1, "give the default fleet's endpoints and components resource tags generated from this seed (fleet.WithTags); -1: no tags")
	fleetOut := fs.String("fleet-json", "", "write the fleet the host runs, tags included, to this file as JSON (Go field names), for tests that check panels against it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *pluginBin == "" {
		return errors.New("--plugin is required: build it with go build -o DIR/" + pluginproc.BinaryName + " ./pkg")
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: use a loopback address such as 127.0.0.1:0", *addr)
	}
	if *tagsSeed >= 0 {
		f, err := fleet.WithTags(fleet.Default(), rand.New(rand.NewPCG(uint64(*tagsSeed), 0))) // #nosec G115 G404 -- test data reproducible from a seed
		if err != nil {
			return fmt.Errorf("tagging the fleet: %w", err)
		}
		opts.Fleet = f
	}
	// The page asks for "the last hour" from the browser's clock, so the history ends now and
	// goes on growing: instant queries at "now" keep finding samples however long the run.
	opts.Live = true
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("starting the emulator stack: %w", err)
	}
	defer st.Close()
	if *fleetOut != "" {
		doc, err := json.Marshal(st.Fleet)
		if err == nil {
			err = os.WriteFile(*fleetOut, doc, 0o600)
		}
		if err != nil {
			return fmt.Errorf("--fleet-json %q: %w", *fleetOut, err)
		}
	}
	if *generated > 0 {
		if err := appendGenerated(ctx, st, st.DB, *generated, opts.Seed); err != nil {
			return err
		}
	}
	series := filterSeries(filterValues(opts.Seed, *nFilter), st.Fleet, st.Region)
	// The backfill leaves older time in blocks, which take no appends: the series start where
	// the head does.
	from := st.End.Add(-opts.History)
	if minValid, ok := st.DB.Head().AppendableMinValidTime(); ok {
		if head := time.UnixMilli(minValid).Add(st.Step).Truncate(st.Step); head.After(from) {
			from = head
		}
	}
	if err := appendFilterSeries(ctx, st.DB, series, from, st.End, st.Step); err != nil {
		return err
	}
	keepCtx, stopKeeping := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		keepFilterSeries(keepCtx, st.DB, series, st.End, st.Step, func(err error) { fmt.Fprintf(stderr, "pluginhost: %v\n", err) })
	}()
	// The appends stop before the stack's TSDB closes.
	defer func() {
		stopKeeping()
		<-kept
	}()
	p, err := pluginproc.Start(*pluginBin)
	if err != nil {
		return err
	}
	defer p.Close()
	var sources []*backend.DataSourceInstanceSettings
	for i, uid := range sourceUIDs {
		sources = append(sources, pluginproc.StackSettings(st, int64(i+1), uid))
	}
	var static http.Handler
	if *page != "" {
		static = http.FileServer(http.Dir(*page))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", pluginhost.New(p, pluginproc.Context, static, sources...))
	// What the emulator's discovery APIs answered since ?since=<Unix ms>: the browser tests
	// measure the request rate and throttling of ad-hoc filter lookups with it.
	mux.HandleFunc("GET /emulator/discovery", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
		if err != nil {
			http.Error(w, "since must be Unix milliseconds, e.g. ?since=1764633600000", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st.Discovery(time.UnixMilli(ms)))
	})
	mux.Handle("GET /emulator/account", accountCounts(st.Account()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(stderr, "pluginhost: scenario %s, %d series; emulator %s; plugin pid %d\n", opts.Scenario, st.Stats.Series, st.URL, p.PID)
	fmt.Fprintf(stdout, "pluginhost: serving http://%s\n", ln.Addr())
	err = srv.Serve(ln)
	// The plugin's own log, for a failing browser test's reader (the script keeps stderr).
	fmt.Fprint(stderr, p.Logs())
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
