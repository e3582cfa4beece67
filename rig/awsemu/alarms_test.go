package awsemu

import (
	"context"
	"errors"
	"fmt"
	"github.com/aws/smithy-go/encoding/cbor"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

var origin = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

// scripted is a Querier whose answer at minute i after origin is the series named in
// breach[i] ("" = none; "a,b" = two), each with value i; it counts its calls.
type scripted struct {
	breach []string
	calls  int
	err    error
}

func (q *scripted) QueryRange(_ context.Context, _ string, start, end time.Time, step time.Duration, f func(promql.Matrix) error) error {
	q.calls++
	if q.err != nil {
		return q.err
	}
	series := map[string]*promql.Series{}
	var m promql.Matrix
	for t := start; !t.After(end); t = t.Add(step) {
		i := int(t.Sub(origin) / time.Minute)
		if i >= len(q.breach) || q.breach[i] == "" {
			continue
		}
		for _, name := range strings.Split(q.breach[i], ",") {
			s := series[name]
			if s == nil {
				m = append(m, promql.Series{Metric: labels.FromStrings("__name__", "x", "ic", name)})
				s = &m[len(m)-1]
				series[name] = s
			}
			s.Floats = append(s.Floats, promql.FPoint{T: t.UnixMilli(), F: float64(i)})
		}
	}
	// m may have grown after a pointer was taken: rebuild from the map's latest copies.
	out := promql.Matrix{}
	for _, s := range m {
		out = append(out, *series[s.Metric.Get("ic")])
	}
	return f(out)
}

func at(i int) time.Time { return origin.Add(time.Duration(i) * time.Minute) }

func TestAlarmStateMachine(t *testing.T) {
	tests := []struct {
		name             string
		pending, recover time.Duration
		breach           []string // minute 0 is the origin, never evaluated
		head             int
		wantState        string
		wantHistory      []string // "minute:from>to[:contributor]"
		wantContributors string
	}{
		{"never breaches", 0, 0, []string{"", "", "", ""}, 3, stateOK, nil, ""},
		{"immediate alarm and recovery", 0, 0, []string{"", "a", "", ""}, 3, stateOK,
			[]string{"1:OK>ALARM:a", "1:OK>ALARM", "2:ALARM>OK:a", "2:ALARM>OK"}, ""},
		{"breach shorter than pending", 2 * time.Minute, 0, []string{"", "a", "a", "", "a", ""}, 5, stateOK, nil, ""},
		{"breach reaches pending", 2 * time.Minute, 0, []string{"", "a", "a", "a", "a"}, 4, stateAlarm,
			[]string{"3:OK>ALARM:a", "3:OK>ALARM"}, "a"},
		{"recovery needs the whole period", 0, 2 * time.Minute, []string{"", "a", "", "a", "", "", "", ""}, 7, stateOK,
			[]string{"1:OK>ALARM:a", "1:OK>ALARM", "6:ALARM>OK:a", "6:ALARM>OK"}, ""},
		{"second contributor keeps the alarm", 0, 0, []string{"", "a", "a,b", "b", "b"}, 4, stateAlarm,
			[]string{"1:OK>ALARM:a", "1:OK>ALARM", "2:OK>ALARM:b", "3:ALARM>OK:a"}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &scripted{breach: tt.breach}
			e := newEvaluator([]fleet.Alarm{{Name: "kv", Query: "x", Period: time.Minute, PendingPeriod: tt.pending, RecoveryPeriod: tt.recover}}, "us-east-1", "123456789012", origin)
			var a *alarm
			if err := e.upTo(context.Background(), q, at(tt.head).Add(30*time.Second), func(as []*alarm) error { a = as[0]; return nil }); err != nil {
				t.Fatal(err)
			}
			if a.state != tt.wantState {
				t.Errorf("state = %s (%s), want %s", a.state, a.reason, tt.wantState)
			}
			var got []string
			for _, h := range a.history {
				s := fmt.Sprintf("%d:%s>%s", int(h.time.Sub(origin)/time.Minute), h.from, h.to)
				if h.contributor != nil {
					s += ":" + h.contributor.attrs["ic"]
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != strings.Join(tt.wantHistory, " ") {
				t.Errorf("history = %v, want %v", got, tt.wantHistory)
			}
			var inAlarm []string
			for _, c := range a.contributors {
				if c.inAlarm {
					inAlarm = append(inAlarm, c.attrs["ic"])
				}
			}
			if strings.Join(inAlarm, ",") != tt.wantContributors {
				t.Errorf("contributors in ALARM = %v, want %q", inAlarm, tt.wantContributors)
			}
			if tt.wantState == stateAlarm && !strings.Contains(a.reason, "ic="+tt.wantContributors) {
				t.Errorf("reason %q does not name the contributor", a.reason)
			}
		})
	}
}

func TestAlarmEvaluationIsIncrementalAndCachedByHead(t *testing.T) {
	breach := []string{"", "", "a", "a", "a", "", "", "", "a", "a"}
	whole := &scripted{breach: breach}
	parts := &scripted{breach: breach}
	def := []fleet.Alarm{{Name: "kv", Query: "x", Period: time.Minute, PendingPeriod: time.Minute, RecoveryPeriod: time.Minute}}
	e1 := newEvaluator(def, "us-east-1", "123456789012", origin)
	e2 := newEvaluator(def, "us-east-1", "123456789012", origin)
	var h1, h2 []historyItem
	read := func(dst *[]historyItem) func([]*alarm) error {
		return func(as []*alarm) error { *dst = as[0].history; return nil }
	}
	if err := e1.upTo(context.Background(), whole, at(9), read(&h1)); err != nil {
		t.Fatal(err)
	}
	for _, head := range []int{2, 2, 3, 5, 5, 8, 9, 9} {
		if err := e2.upTo(context.Background(), parts, at(head), read(&h2)); err != nil {
			t.Fatal(err)
		}
	}
	text := func(hs []historyItem) string {
		var b strings.Builder
		for _, h := range hs {
			fmt.Fprintf(&b, "%s %s %s\n", h.time, h.summary, h.data)
		}
		return b.String()
	}
	if text(h1) != text(h2) || len(h1) == 0 {
		t.Errorf("evaluating in steps gave another history:\nwhole %s\nsteps %s", text(h1), text(h2))
	}
	if parts.calls != 5 { // heads 2, 3, 5, 8, 9: a repeated head queries nothing
		t.Errorf("%d queries for 8 requests over 5 distinct heads, want 5", parts.calls)
	}
}

func TestAlarmQueryFailureIsInsufficientData(t *testing.T) {
	q := &scripted{err: errors.New("boom")}
	e := newEvaluator([]fleet.Alarm{{Name: "kv", Query: "x", Period: time.Minute}}, "us-east-1", "123456789012", origin)
	var a *alarm
	if err := e.upTo(context.Background(), q, at(3), func(as []*alarm) error { a = as[0]; return nil }); err != nil {
		t.Fatal(err)
	}
	if a.state != stateInsufficient || !strings.Contains(a.reason, "boom") || len(a.history) != 1 {
		t.Errorf("state %s reason %q history %v", a.state, a.reason, a.history)
	}
}

// Pages of a history stay one consistent listing while evaluation moves on between them.
func TestHistoryPagesKeepTheirHorizon(t *testing.T) {
	head := at(5)
	f := &fleet.Fleet{Region: "us-east-1", Account: "123456789012",
		Alarms: []fleet.Alarm{{Name: "kv", Query: "x", Period: time.Minute}}}
	s, err := New(Config{Fleet: f, Origin: origin, Head: func() time.Time { return head }})
	if err != nil {
		t.Fatal(err)
	}
	q := &scripted{breach: []string{"", "a", "", "a", "", "a", "", "a", "", "a"}}
	var seen []string
	tok := ""
	for pageNo := 0; ; pageNo++ {
		in := cbor.Map{"MaxRecords": cbor.Uint(1), "HistoryItemType": cbor.String("StateUpdate")}
		if tok != "" {
			in["NextToken"] = cbor.String(tok)
		}
		out, aerr := s.describeAlarmHistory(context.Background(), cborIn(in), q)
		if aerr != nil {
			t.Fatal(aerr)
		}
		for _, it := range out["AlarmHistoryItems"].(cbor.List) {
			ts, err := cbor.AsTime(it.(cbor.Map)["Timestamp"])
			if err != nil {
				t.Fatal(err)
			}
			seen = append(seen, fmt.Sprint(int(ts.Sub(origin)/time.Minute)))
		}
		head = at(9) // more transitions happen while the client pages
		next, ok := out["NextToken"].(cbor.String)
		if !ok {
			break
		}
		tok = string(next)
	}
	// Up to minute 5: OK→ALARM at 1, 3, 5 and ALARM→OK at 2, 4; newest first, each once.
	if got := strings.Join(seen, ","); got != "5,4,3,2,1" {
		t.Errorf("paged transitions at minutes %s, want 5,4,3,2,1 (the first page's horizon)", got)
	}
}
