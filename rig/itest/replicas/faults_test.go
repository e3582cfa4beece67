package replicas_test

import (
	"sync"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/dashload"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// faultRun is four replicas sharing the store while it is paused (SIGSTOP), killed and
// restarted during their cold loads, with probe rounds (new panels asked by every replica
// at once) throughout and after.
type faultRun struct {
	load                                phase
	rounds                              []probeRound
	paused, resumed, stopped, restarted time.Time
	// recovered is when the first probe round begun after the restart cost no more than
	// 1.1× one replica's calls: the replicas share the store again. Zero: not within.
	recovered time.Time
}

const (
	faultReplicas  = 4
	probesPerRound = 4
	probeEvery     = 2 * time.Second
)

// runFaults opens the dashboards on four replicas of a new data source using the store and,
// while they load, pauses the store for hold once an eighth of the dashboards' queries have
// reached upstream, then kills it once half have, for hold, and restarts it (empty). Probe
// rounds run from the start until one after the restart is back at ≤ 1.1× one replica's
// calls, or within has passed since the restart.
func runFaults(tb testing.TB, r *rig, uid string, dashes []dashload.Dashboard, hold, within time.Duration) faultRun {
	tb.Helper()
	reps, stop := r.replicas(tb, faultReplicas, r.dataSource(uid, r.shared(nil)), 1)
	defer stop()
	clients := clientsOf(reps)
	queries := 0
	for _, d := range dashes {
		queries += len(d.Lookups)
		for _, p := range d.Panels {
			queries += len(p.Queries)
		}
	}
	var f faultRun
	start := r.meter.Count()
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		f.load, _ = coldAndRefresh(r, clients, dashes, 0, nil)
	}()
	var mu sync.Mutex
	stopProbes, probed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(probed)
		for tick := time.NewTicker(probeEvery); ; {
			round := runProbeRound(r.meter, clients, probesPerRound)
			mu.Lock()
			f.rounds = append(f.rounds, round)
			mu.Unlock()
			select {
			case <-stopProbes:
				tick.Stop()
				return
			case <-tick.C:
			}
		}
	}()
	// waitCalls returns once n calls have reached upstream since the start, or the load is over.
	waitCalls := func(n int) {
		for r.meter.Count()-start < n {
			select {
			case <-loaded:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitCalls(queries / 8)
	f.paused = time.Now()
	r.store.Pause()
	time.Sleep(hold)
	r.store.Resume()
	f.resumed = time.Now()
	waitCalls(queries / 2)
	f.stopped = time.Now()
	r.store.Stop()
	time.Sleep(hold)
	r.store.Restart()
	f.restarted = time.Now()
	for deadline := f.restarted.Add(within); time.Now().Before(deadline) && f.recovered.IsZero(); time.Sleep(probeEvery / 4) {
		mu.Lock()
		for _, round := range f.rounds {
			if round.at.After(f.restarted) && round.ratio() <= 1.1 {
				f.recovered = round.at
				break
			}
		}
		mu.Unlock()
	}
	close(stopProbes)
	<-probed
	<-loaded
	return f
}

// probeFailures and probeNotices sum the rounds'.
func (f faultRun) probeFailures() (failed, notices int) {
	for _, r := range f.rounds {
		failed += r.failed
		notices += r.unavailable
	}
	return failed, notices
}

// smallFleet is the tests' stack: a 20 × 8 fleet with 2 h of history, enough for every
// panel of the three dashboards to query real series at a fraction of the bench's cost.
var smallFleet = stack.Options{Fleet: fleet.Large(20, 8), History: 2 * time.Hour}

// TestStoreFaults: four replicas share a store that is paused (SIGSTOP), killed and
// restarted while they open the three dashboards. No panel fails, the replicas say
// "shared cache unavailable", and new panels cost one replica's calls again once the store
// is back, within a minute (the client backs off for at most 30 s).
func TestStoreFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the plugin and runs four replicas against the emulator and redis-server")
	}
	r := startRig(t, smallFleet)
	f := runFaults(t, r, "faults", fleetLoad(t, r.st), 2*time.Second, time.Minute)
	pf, pn := f.probeFailures()
	if n := f.load.failedPanels(nil) + pf; n > 0 {
		t.Errorf("%d panels failed while the store failed (want 0): %v", n, f.load.errors())
	}
	if total(f.load.notices(unavailable))+pn == 0 {
		t.Errorf("no answer said %q while the store was paused and killed", unavailable)
	}
	if f.recovered.IsZero() {
		t.Errorf("no probe round within a minute of the restart cost ≤ 1.1× one replica's calls: rounds %+v", f.rounds)
	}
	var outage []float64 // the ratio of the rounds while the store was down
	for _, round := range f.rounds {
		if round.at.After(f.stopped) && round.at.Before(f.restarted) {
			outage = append(outage, round.ratio())
		}
	}
	t.Logf("%s; probe ratios while killed %v; notices %d on panels, %d on probes", recoveryText(f), outage, total(f.load.notices(unavailable)), pn)
}
