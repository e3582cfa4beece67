// Package replicas_test runs several plugin processes (replicas of one data source, as
// behind a load balancer) against one emulator stack and one real redis-server, and
// measures what sharing the store changes: upstream calls, the account's 422 and 429
// answers, and what a store that fails does to panels (issue 34).
package replicas_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
	"github.com/inferscope/sagemaker-datasource/rig/dashload"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/itest/gobuild"
	"github.com/inferscope/sagemaker-datasource/rig/pluginproc"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// rig is one emulator stack behind a metering proxy, the built plugin binary and a
// redis-server; every replica of every data source the test makes goes through the proxy.
type rig struct {
	st    *stack.Stack
	meter *dashload.Meter // every proxy's calls
	front string          // a proxy's URL: the data sources' endpoint
	store *storetest.Server
	bin   string
}

// startRig builds the plugin, starts the stack (opts, with CloudWatch's limits enforced and
// counted per account) behind the meter and a redis-server. Everything stops with the test.
func startRig(tb testing.TB, opts stack.Options) *rig {
	tb.Helper()
	r := &rig{store: storetest.Start(tb), meter: &dashload.Meter{}}
	r.bin = gobuild.Build(tb, pluginproc.Package, tb.TempDir(), pluginproc.BinaryName)
	opts.Accounts = &emulator.Accounts{}
	st, err := stack.Start(context.Background(), opts)
	if err != nil {
		tb.Fatalf("starting the emulator stack: %v", err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	r.st = st
	r.front = r.endpoint(tb)
	return r
}

// endpoint is a new metering proxy in front of the stack: data sources pointed at two of
// them have two credential identities (the endpoint is part of it) on one account.
func (r *rig) endpoint(tb testing.TB) string {
	target, _ := url.Parse(r.st.URL)
	front := httptest.NewServer(r.meter.Serve(httputil.NewSingleHostReverseProxy(target)))
	tb.Cleanup(front.Close)
	return front.URL
}

// dataSource is the settings every replica of one data source shares: the stack's keys
// and region, the proxy as endpoint, and the extras' jsonData on top (such as shared).
func (r *rig) dataSource(uid string, extras ...map[string]any) *backend.DataSourceInstanceSettings {
	jsonData, secure := r.st.DataSourceSettings()
	jd := map[string]any{}
	for k, v := range jsonData {
		jd[k] = v
	}
	jd["endpoint"] = r.front
	for _, extra := range extras {
		maps.Copy(jd, extra)
	}
	raw, _ := json.Marshal(jd)
	return &backend.DataSourceInstanceSettings{
		ID: 1, UID: uid, Name: "SageMaker", Type: models.PluginID,
		JSONData: raw, DecryptedSecureJSONData: secure,
		Updated: time.Now(),
	}
}

// shared is the jsonData that points a data source at the rig's store, with more of the
// store's settings (jsonData.sharedStore) when given.
func (r *rig) shared(more map[string]any) map[string]any {
	store := map[string]any{"addresses": []string{r.store.Addr}}
	maps.Copy(store, more)
	return map[string]any{"sharedStore": store}
}

// replica is one plugin process serving a data source in an org.
type replica struct {
	proc   *pluginproc.Process
	client dashload.Client
}

// replicas starts n plugin processes (in parallel, as a deployment's pods start) serving ds
// in org; stop ends them (it is safe to call again: the test's cleanup does).
func (r *rig) replicas(tb testing.TB, n int, ds *backend.DataSourceInstanceSettings, org int64) (out []replica, stop func()) {
	tb.Helper()
	pc := pluginproc.Context(ds)
	pc.OrgID = org
	out = make([]replica, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			p, err := pluginproc.Start(r.bin)
			errs[i] = err
			if err == nil {
				out[i] = replica{proc: p, client: p.For(pc)}
			}
		})
	}
	wg.Wait()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, rp := range out {
				if rp.proc != nil {
					rp.proc.Close()
				}
			}
		})
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for i, rp := range out {
				if rp.proc != nil {
					tb.Logf("replica %d log:\n%s", i, rp.proc.Logs())
				}
			}
		}
		stop()
	})
	for _, err := range errs {
		if err != nil {
			tb.Fatalf("starting a replica: %v", err)
		}
	}
	return out, stop
}

// fleetLoad is what the replicas open: the generated dashboards as Grafana sends them to a
// data source whose timeInterval is the stack's step, without the CloudTrail panel.
// CloudTrail allows 2 LookupEvents a second per account and, without the store, each
// replica paces itself to it alone: four replicas opening it at once while the store is
// down are throttled, which would measure CloudTrail's limit, not the store.
func fleetLoad(tb testing.TB, st *stack.Stack) []dashload.Dashboard {
	dashes := dashload.Dashboards(tb)
	for i := range dashes {
		dashes[i].Panels = slices.DeleteFunc(dashes[i].Panels, func(p dashload.Panel) bool {
			return slices.ContainsFunc(p.Queries, func(q backend.DataQuery) bool { return q.QueryType == models.QueryTypeChanges })
		})
	}
	dashload.RaiseInterval(dashes, st.Step)
	return dashes
}
