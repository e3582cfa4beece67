// Package simulator generates the series of a simulated SageMaker inference fleet (engine,
// DCGM, node exporter, enriched vended metrics and control-plane events) into a Prometheus
// storage.Appendable: a backfilled history, then live samples. Output is deterministic for a
// fleet, scenario and seed. Names and labels come from pkg/semconv only.
package simulator

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/storage"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Simulator holds the fleet's entities, their series and their running state.
type Simulator struct {
	mu      sync.Mutex
	f       *fleet.Fleet
	seed    int64
	workers int      // endpoints stepped in parallel
	ls      labelSet // fleet-wide series (ICE events); endpoints have their own

	eps    []*endpointSim
	insts  []*instSim
	events map[string]*series // fleet-wide event series

	started              bool
	origin, anchor, last int64 // ms: history start, "now" of the history, last appended step
	incidentFrom         int64
	lead                 time.Duration // how long before the end of the history the incident starts
	scenario             string
	crash                *copySim
	ice                  *iceSim
	noVended             bool // enrichment-off
	changes              []*plannedChange
}

// IncidentLead is how long before the end of the backfilled history incidents start, so
// queries over the last hour or two see them (NewWithLead moves the start).
const IncidentLead = 90 * time.Minute

// Stats describes one backfill.
type Stats struct {
	Series  int // label sets the simulator built
	Samples int // float and histogram samples appended
	Steps   int
}

// New builds a simulator for a validated fleet and a scenario from Scenarios().
func New(f *fleet.Fleet, scenario string, seed int64) (*Simulator, error) {
	return NewWithLead(f, scenario, seed, IncidentLead)
}

// NewWithLead is New with the incident starting lead before the end of the first backfill
// instead of 90 minutes (the crash at two thirds of it, the scenario's events spread over
// it), so tests can place an incident anywhere relative to the range they diagnose.
func NewWithLead(f *fleet.Fleet, scenario string, seed int64, lead time.Duration) (*Simulator, error) {
	if lead <= 0 {
		return nil, fmt.Errorf("simulator: the incident lead must be positive, got %v", lead)
	}
	if f == nil {
		return nil, errors.New("simulator: nil fleet; use fleet.Default() or fleet.Load")
	}
	sc := lookupScenario(scenario)
	if sc == nil {
		return nil, fmt.Errorf("unknown scenario %q; choose one of %s", scenario, scenarioNames())
	}
	s := &Simulator{f: f, seed: seed, lead: lead, scenario: sc.Name, workers: runtime.GOMAXPROCS(0), events: map[string]*series{}, noVended: sc.noEnrichment}
	if err := s.build(); err != nil {
		return nil, err
	}
	if err := sc.apply(s); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return s, nil
}

// seriesCount is the number of label sets built so far (events add a few as they happen).
func (s *Simulator) seriesCount() int {
	n := s.ls.count
	for _, ep := range s.eps {
		n += ep.ls.count
	}
	return n
}

// Backfill appends one sample per series per step for [from, to], one transaction per
// step. The first backfill fixes the history: incidents are placed relative to its end.
func (s *Simulator) Backfill(ctx context.Context, app storage.Appendable, from, to time.Time, step time.Duration) (Stats, error) {
	if step <= 0 || !to.After(from) {
		return Stats{}, fmt.Errorf("backfill needs step > 0 and to after from (got step %v, %v..%v)", step, from, to)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.setAnchor(from.UnixMilli(), to.UnixMilli())
	}
	st := Stats{}
	for t := from.UnixMilli(); t <= to.UnixMilli(); t += step.Milliseconds() {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		n, err := s.appendAt(ctx, app, t, step)
		st.Samples += n
		st.Steps++
		if err != nil {
			return st, err
		}
	}
	st.Series = s.seriesCount()
	return st, nil
}

// Run appends a step at wall-clock time every step until ctx ends; it then returns nil.
func (s *Simulator) Run(ctx context.Context, app storage.Appendable, step time.Duration) error {
	if step <= 0 {
		return fmt.Errorf("live step must be positive, got %v", step)
	}
	tick := time.NewTicker(step)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			s.mu.Lock()
			t := now.UnixMilli()
			if !s.started {
				s.setAnchor(t, t)
			}
			var err error
			if t > s.last {
				_, err = s.appendAt(ctx, app, t, step)
			}
			s.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
}

func (s *Simulator) setAnchor(origin, anchor int64) {
	s.origin, s.anchor = origin, anchor
	s.incidentFrom = anchor - s.lead.Milliseconds()
}

func (s *Simulator) appendAt(ctx context.Context, app storage.Appendable, t int64, step time.Duration) (int, error) {
	if s.started && t <= s.last {
		return 0, fmt.Errorf("sample time %s is not after the last appended step %s", time.UnixMilli(t).UTC(), time.UnixMilli(s.last).UTC())
	}
	dt := step.Seconds()
	if s.started {
		dt = float64(t-s.last) / 1000
	}
	// Endpoints are independent: workers take them one by one, each with its own appender,
	// and commit in parallel too (the commit is where the TSDB spends most of its time).
	first := !s.started
	errs := make([]error, min(s.workers, len(s.eps))+1)
	counts := make([]int, len(errs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range len(errs) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &writer{app: app.Appender(ctx), noVended: s.noVended}
			for j := next.Add(1) - 1; j < int64(len(s.eps)); j = next.Add(1) - 1 {
				s.tickEndpoint(w, s.eps[j], t, dt, first)
			}
			counts[i], errs[i] = w.finish()
		}()
	}
	wg.Wait()
	if s.ice != nil {
		w := &writer{app: app.Appender(ctx), noVended: s.noVended}
		s.iceEvents(w, t)
		counts[len(errs)-1], errs[len(errs)-1] = w.finish()
	}
	samples := 0
	for _, n := range counts {
		samples += n
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("append at %s: %w", time.UnixMilli(t).UTC(), err)
	}
	s.last, s.started = t, true
	return samples, nil
}

func (s *Simulator) incident(t int64) bool { return t >= s.incidentFrom }

// hash is a seeded, stable hash of strings for ids and burst times.
func (s *Simulator) hash(parts ...string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(uint64(s.seed) >> (8 * i)) // #nosec G115 -- the seed's bytes, one at a time
	}
	_, _ = h.Write(b[:])
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return mix(h.Sum64())
}

// mix is splitmix64's finaliser: spreads nearby inputs over all bits.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

const (
	hourMs = int64(time.Hour / time.Millisecond)
	dayMs  = 24 * hourMs
)

// rate is the group's offered load at t: base × daily wave × seeded bursts, raised to the
// scenario's floor during an incident.
func (s *Simulator) rate(g *groupSim, t int64) float64 {
	tr := g.traffic
	hour := float64(t%dayMs) / float64(hourMs)
	r := tr.BaseRPS * (1 + tr.DiurnalAmplitude*math.Cos(2*math.Pi*(hour-float64(tr.PeakHourUTC))/24))
	if inBurst(g.key, tr, t) {
		r *= tr.BurstFactor
	}
	if g.floorConcurrency > 0 && s.incident(t) {
		r = math.Max(r, g.floorConcurrency*float64(g.active)/g.params(true).serviceAtRest())
	}
	return r
}

// inBurst places BurstsPerDay bursts per UTC day at hashed start times.
func inBurst(key uint64, tr fleet.Traffic, t int64) bool {
	day := t / dayMs
	into := t - day*dayMs
	n := int(tr.BurstsPerDay)
	if frac := tr.BurstsPerDay - float64(n); float64(mix(key^uint64(day))%1000)/1000 < frac { // #nosec G115 -- hash arithmetic on a day number
		n++
	}
	length := int64(tr.BurstMinutes) * 60000
	for k := 0; k < n; k++ {
		start := int64(mix(key+uint64(day)*31+uint64(k)*7919) % uint64(dayMs-length)) // #nosec G115 -- hash arithmetic; the remainder is below dayMs
		if into >= start && into < start+length {
			return true
		}
	}
	return false
}
