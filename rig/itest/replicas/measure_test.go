package replicas_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/rig/dashload"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// unavailable is the notice a replica shows (once) while its store fails.
const unavailable = "shared cache unavailable"

// phase is what a group of replicas' loads cost upstream and what the panels got.
type phase struct {
	calls []dashload.Call
	loads []dashload.Result
	// account is what the account's CloudWatch limits answered during the phase.
	account emulator.AccountCounts
	began   time.Time
	took    time.Duration
}

// answers are the phase's upstream calls (every AWS API the replicas called, through the
// proxy) and the account's refusals among its CloudWatch calls, as the emulator counted
// them: 422 over the rate, 429 over the concurrency.
func (p phase) answers() (calls, rate422, conc429 int) {
	a := p.account
	return len(p.calls), int(a.Query.Throttled + a.Discovery.Throttled), int(a.Query.Rejected + a.Discovery.Rejected)
}

// failedPanels counts the panels that failed in the phase's loads (a panel once per
// load), leaving out those in except.
func (p phase) failedPanels(except map[string]bool) int {
	n := 0
	for _, l := range p.loads {
		for _, k := range l.Failed {
			if !except[k] {
				n++
			}
		}
	}
	return n
}

// failedSet is the panels that failed in any of the phases' loads.
func failedSet(ps ...phase) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		for _, l := range p.loads {
			for _, k := range l.Failed {
				out[k] = true
			}
		}
	}
	return out
}

// perAnswer is what differs between answers of one error: the request id, and when a
// kept answer was made.
var perAnswer = regexp.MustCompile(` ?\[request id [^]]*\]| ?\(this is the answer of [^)]*\)?`)

// errors are the phase's distinct errors (the first line, shortened) with their counts.
func (p phase) errors() map[string]int {
	out := map[string]int{}
	for _, l := range p.loads {
		for _, e := range l.Errors {
			e, _, _ = strings.Cut(e, "\n")
			e = perAnswer.ReplaceAllString(e, "")
			if len(e) > 240 {
				e = e[:240] + "…"
			}
			out[e]++
		}
	}
	return out
}

// notices counts the frames whose notice says text, by the notice's text.
func (p phase) notices(text string) map[string]int {
	out := map[string]int{}
	for _, l := range p.loads {
		for _, t := range l.Notices {
			if strings.Contains(t, text) {
				out[t]++
			}
		}
	}
	return out
}

// kinds counts the phase's calls by kind: range and instant queries, lookups (labels,
// series, values), and the other AWS APIs by operation.
func (p phase) kinds() string {
	n, aws := map[string]int{}, map[string]int{}
	for _, c := range p.calls {
		if !isPromQL(c) {
			n["aws"]++
			aws[c.Target]++
			continue
		}
		n[c.Kind]++
	}
	ops := make([]string, 0, len(aws))
	for _, op := range slices.Sorted(maps.Keys(aws)) {
		ops = append(ops, fmt.Sprintf("%s %d", op, aws[op]))
	}
	return fmt.Sprintf("%d range, %d instant, %d lookup, %d aws (%s)", n["range"], n["instant"], n["lookup"], n["aws"], strings.Join(ops, ", "))
}

// isPromQL says whether a call is to CloudWatch's PromQL API (the rest are the AWS APIs
// the cost, diagnosis and alarm panels call).
func isPromQL(c dashload.Call) bool { return strings.HasPrefix(c.Path, "/api/v1/") }

// upstreamTime is the p50 and p90 of the phase's PromQL calls' time at the emulator.
func (p phase) upstreamTime() (p50, p90 time.Duration) {
	var ds []time.Duration
	for _, c := range p.calls {
		if isPromQL(c) {
			ds = append(ds, c.Took)
		}
	}
	return quantile(ds, 0.5), quantile(ds, 0.9)
}

// total is the sum of a count by key.
func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// coldAndRefresh has every replica open every dashboard (the replicas at once, each its
// dashboards one after another), then, once all are open, refresh each dashboard
// refreshAfter after its own cold load began (0: no refresh). between runs after the cold
// loads, before the refreshes, and its calls belong to neither phase.
func coldAndRefresh(r *rig, clients []dashload.Client, dashes []dashload.Dashboard, refreshAfter time.Duration, between func()) (cold, refresh phase) {
	opened := make([][]time.Time, len(clients))
	each := func(ph *phase, at func(i, j int) time.Time) {
		before, start, acct := r.meter.Count(), time.Now(), r.st.Account().Counts()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Go(func() {
				for j, d := range dashes {
					time.Sleep(time.Until(at(i, j)))
					res := dashload.Load(c, r.meter, d, time.Now())
					mu.Lock()
					ph.loads = append(ph.loads, res)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		ph.began, ph.took, ph.calls, ph.account = start, time.Since(start), r.meter.Since(before), r.st.Account().Counts().Sub(acct)
	}
	for i := range opened {
		opened[i] = make([]time.Time, len(dashes))
	}
	each(&cold, func(i, j int) time.Time {
		opened[i][j] = time.Now()
		return opened[i][j]
	})
	if between != nil {
		between()
	}
	if refreshAfter > 0 {
		each(&refresh, func(i, j int) time.Time { return opened[i][j].Add(refreshAfter) })
	}
	return cold, refresh
}

// clientsOf are the replicas' data source clients.
func clientsOf(reps []replica) []dashload.Client {
	out := make([]dashload.Client, len(reps))
	for i, r := range reps {
		out[i] = r.client
	}
	return out
}

// probe is a panel no replica has asked before: a range query whose expression is new
// (the n-th), over the last hour.
func probe(n int) (expr string, q backend.DataQuery) {
	expr = fmt.Sprintf("count(DCGM_FI_DEV_GPU_UTIL) + %d", n)
	raw, _ := json.Marshal(map[string]any{"refId": "P", "expr": expr, "range": true})
	now := time.Now()
	return expr, backend.DataQuery{RefID: "P", JSON: raw, MaxDataPoints: 1000, Interval: time.Minute,
		TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}}
}

// probeRound is k new panels asked by every replica at once.
type probeRound struct {
	at          time.Time
	k, calls    int // panels; upstream calls for them, from every replica
	failed      int
	unavailable int // answers with the store's notice
}

// ratio is the round's calls against one replica's (k): 1 when the replicas share one
// fetch per panel, their number when each fetches alone.
func (r probeRound) ratio() float64 { return float64(r.calls) / float64(r.k) }

// probes counts the probe expressions handed out, so no two rounds share one.
var probes atomic.Int64

func runProbeRound(m *dashload.Meter, clients []dashload.Client, k int) probeRound {
	before := m.Count()
	round := probeRound{at: time.Now(), k: k}
	exprs := make([]string, k)
	queries := make([]backend.DataQuery, k)
	for i := range k {
		exprs[i], queries[i] = probe(int(probes.Add(1)))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range clients {
		for _, q := range queries {
			wg.Go(func() {
				resp, err := c.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					round.failed++
					return
				}
				for _, dr := range resp.Responses {
					if dr.Error != nil {
						round.failed++
					}
					for _, f := range dr.Frames {
						if f.Meta != nil && slices.ContainsFunc(f.Meta.Notices, func(n data.Notice) bool { return strings.Contains(n.Text, unavailable) }) {
							round.unavailable++
						}
					}
				}
			})
		}
	}
	wg.Wait()
	for _, c := range m.Since(before) {
		if slices.Contains(exprs, c.Query) {
			round.calls++
		}
	}
	return round
}

// loadAverage is the machine's 1-minute load average (the machine is shared: every number
// is reported with it).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// quantile is the q-quantile (nearest rank) of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
