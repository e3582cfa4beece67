package awsemu

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Alarm states as CloudWatch spells them.
const (
	stateOK           = "OK"
	stateAlarm        = "ALARM"
	stateInsufficient = "INSUFFICIENT_DATA"
)

// alarm is one PromQL alarm and the state its evaluations so far left it in.
type alarm struct {
	def fleet.Alarm
	arn string

	state, reason    string
	updated          time.Time // last state change
	contributors     map[string]*contributor
	history          []historyItem // oldest first
	evaluatedThrough time.Time
}

// contributor is one series of the alarm's query: breaching, in ALARM, or recovering.
type contributor struct {
	id          string
	attrs       map[string]string
	inAlarm     bool
	since       time.Time // when it went to ALARM
	breachStart time.Time // first evaluation of the current breach; zero when not breaching
	clearStart  time.Time // first evaluation without it while in ALARM; zero otherwise
	value       float64
	reason      string
}

// historyItem is one StateUpdate of DescribeAlarmHistory.
type historyItem struct {
	alarm       string
	time        time.Time
	from, to    string
	summary     string
	data        string
	contributor *contributor // a copy; nil for the alarm's own transitions
}

// evaluator evaluates the fleet's alarms over the simulated history, lazily: each request
// brings them up to the head of the TSDB, evaluating only the periods not seen yet, so
// repeated calls for the same head cost nothing and the result does not depend on when
// or how often it is asked.
type evaluator struct {
	mu     sync.Mutex
	alarms []*alarm
	origin time.Time
}

func newEvaluator(defs []fleet.Alarm, region, account string, origin time.Time) *evaluator {
	e := &evaluator{origin: origin}
	for _, d := range defs {
		e.alarms = append(e.alarms, &alarm{
			def: d, arn: fmt.Sprintf("arn:aws:cloudwatch:%s:%s:alarm:%s", region, account, d.Name),
			// The alarms exist before the history starts; their first state is OK.
			state: stateOK, reason: "The alarm was created before the simulated history began", updated: origin,
			contributors: map[string]*contributor{}, evaluatedThrough: origin,
		})
	}
	return e
}

// upTo evaluates every alarm at each of its periods after the last evaluation up to head,
// and returns the alarms (to be read under the evaluator's lock by the caller's f).
func (e *evaluator) upTo(ctx context.Context, q emulator.Querier, head time.Time, f func([]*alarm) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range e.alarms {
		if err := a.advance(ctx, q, head); err != nil {
			return err
		}
	}
	return f(e.alarms)
}

// advance runs the alarm's query over the periods in (evaluatedThrough, head] as one range
// query and steps the state machine at each.
func (a *alarm) advance(ctx context.Context, q emulator.Querier, head time.Time) error {
	p := a.def.Period
	first := a.evaluatedThrough.Add(p)
	if head.Before(first) {
		return nil
	}
	last := first.Add(head.Sub(first) / p * p)
	present := map[int64][]sample{} // evaluation time (ms) → series breaching then
	err := q.QueryRange(ctx, a.def.Query, first, last, p, func(m promql.Matrix) error {
		for _, s := range m {
			attrs := s.Metric.WithoutEmpty().DropMetricName()
			id := contributorID(attrs)
			for _, pt := range s.Floats {
				present[pt.T] = append(present[pt.T], sample{id: id, attrs: attrs, value: pt.F})
			}
			for _, pt := range s.Histograms {
				present[pt.T] = append(present[pt.T], sample{id: id, attrs: attrs, value: pt.H.Count})
			}
		}
		return nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		// A query that cannot run leaves the alarm without data, as CloudWatch does.
		a.evaluatedThrough = last
		a.setState(last, stateInsufficient, "The alarm's query failed: "+err.Error())
		return nil
	}
	for t := first; !t.After(last); t = t.Add(p) {
		a.step(t, present[t.UnixMilli()])
	}
	a.evaluatedThrough = last
	return nil
}

type sample struct {
	id    string
	attrs labels.Labels
	value float64
}

// step applies one evaluation at t with the series breaching then.
func (a *alarm) step(t time.Time, breaching []sample) {
	seen := map[string]bool{}
	for _, s := range breaching {
		seen[s.id] = true
		c := a.contributors[s.id]
		if c == nil {
			c = &contributor{id: s.id, attrs: s.attrs.Map()}
			a.contributors[s.id] = c
		}
		c.value, c.clearStart = s.value, time.Time{}
		if c.breachStart.IsZero() {
			c.breachStart = t
		}
		if !c.inAlarm && t.Sub(c.breachStart) >= a.def.PendingPeriod {
			c.inAlarm, c.since = true, t
			c.reason = fmt.Sprintf("Threshold Crossed: the query returned %s for %s (value %s)", describe(c.attrs), breachFor(a.def.PendingPeriod), fmtValue(c.value))
			a.record(t, stateOK, stateAlarm, c)
		}
	}
	// In id order, so that recoveries at the same time are recorded in a stable order.
	ids := make([]string, 0, len(a.contributors))
	for id := range a.contributors {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c := a.contributors[id]
		if seen[id] {
			continue
		}
		c.breachStart = time.Time{}
		if !c.inAlarm {
			delete(a.contributors, id) // a breach shorter than the pending period
			continue
		}
		if c.clearStart.IsZero() {
			c.clearStart = t
		}
		if t.Sub(c.clearStart) >= a.def.RecoveryPeriod {
			c.inAlarm = false
			c.reason = fmt.Sprintf("Threshold no longer crossed: the query has not returned %s for %s", describe(c.attrs), breachFor(a.def.RecoveryPeriod))
			a.record(t, stateAlarm, stateOK, c)
			delete(a.contributors, id)
		}
	}
	var alarming []*contributor
	for _, c := range a.contributors {
		if c.inAlarm {
			alarming = append(alarming, c)
		}
	}
	sortContributors(alarming)
	switch {
	case len(alarming) > 0:
		parts := make([]string, 0, min(len(alarming), 3))
		for _, c := range alarming[:min(len(alarming), 3)] {
			parts = append(parts, fmt.Sprintf("%s (value %s)", describe(c.attrs), fmtValue(c.value)))
		}
		more := ""
		if len(alarming) > 3 {
			more = fmt.Sprintf(" and %d more", len(alarming)-3)
		}
		a.setState(t, stateAlarm, fmt.Sprintf("Threshold Crossed: %d series breaching: %s%s", len(alarming), strings.Join(parts, ", "), more))
	default:
		a.setState(t, stateOK, "Threshold not crossed: the query returns no breaching series")
	}
}

// setState changes the alarm's state at t; only a change of the state value is a
// transition in the history.
func (a *alarm) setState(t time.Time, state, reason string) {
	if state == a.state {
		if state != stateOK {
			a.reason = reason // the breaching set may change while the state does not
		}
		return
	}
	from := a.state
	a.state, a.reason, a.updated = state, reason, t
	a.record(t, from, state, nil)
}

// record appends a StateUpdate history item; c is the contributor whose state changed, or
// nil for the alarm's own transition.
func (a *alarm) record(t time.Time, from, to string, c *contributor) {
	reason := a.reason
	item := historyItem{alarm: a.def.Name, time: t, from: from, to: to}
	if c != nil {
		cc := *c
		item.contributor = &cc
		reason = c.reason
		item.summary = fmt.Sprintf("Alarm contributor %s updated from %s to %s", describe(c.attrs), from, to)
	} else {
		item.summary = fmt.Sprintf("Alarm updated from %s to %s", from, to)
	}
	data, _ := json.Marshal(map[string]any{ // plain strings and times always encode
		"version":   "1.0",
		"oldState":  map[string]string{"stateValue": from},
		"newState":  map[string]string{"stateValue": to, "stateReason": reason},
		"timestamp": t.UTC().Format("2006-01-02T15:04:05.000Z0700"),
	})
	item.data = string(data)
	a.history = append(a.history, item)
}

// contributorID is a stable id for a series' labels.
func contributorID(ls labels.Labels) string {
	h := fnv.New64a()
	ls.Range(func(l labels.Label) {
		_, _ = h.Write([]byte(l.Name))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(l.Value))
		_, _ = h.Write([]byte{0})
	})
	return strconv.FormatUint(h.Sum64(), 16)
}

func describe(attrs map[string]string) string {
	if len(attrs) == 0 {
		return "{}"
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + attrs[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func breachFor(d time.Duration) string {
	if d == 0 {
		return "one evaluation"
	}
	return "at least " + d.String()
}

func fmtValue(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func sortContributors(cs []*contributor) {
	sort.Slice(cs, func(i, j int) bool {
		if !cs[i].since.Equal(cs[j].since) {
			return cs[i].since.Before(cs[j].since)
		}
		return cs[i].id < cs[j].id
	})
}
