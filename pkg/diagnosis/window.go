package diagnosis

import (
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"
)

// minPoints is the fewest points of a signal a rule judges; with fewer the report says there
// is not enough data instead of guessing.
const minPoints = 3

// notEnoughData warns that a signal had too few points in the range to judge.
func (e *env) notEnoughData(signal string, n int) {
	e.warnings.add(fmt.Sprintf("not enough data: %s has %d points in the range (%d needed); widen the range or wait for more data", signal, n, minPoints))
}

// episode is an incident window: the longest run of consecutive points of a series (on the
// range-query grid) where a condition held, with its most extreme value. Rules judge these
// windows, not statistics of the whole range, so a 90-minute incident weighs the same in a
// 1-hour and in a 6-day range.
type episode struct {
	from, to time.Time // first and last point of the run
	points   int
	peak     float64 // largest value in the run (smallest for episodes of "below")
}

func (ep episode) found() bool { return ep.points > 0 }

// lasting is the time the run covers: each point stands for the step that ends at it,
// clipped to the range (the first point of a range query covers the step before the range).
func (ep episode) lasting(e *env) time.Duration {
	from := ep.from.Add(-e.step)
	if from.Before(e.start) {
		from = e.start
	}
	return ep.to.Sub(from)
}

// sustained says whether the episode lasted long enough to be an incident: two points or
// more (one point is one sample's noise at coarse steps) covering at least atLeast, or half
// of a range shorter than that.
func (ep episode) sustained(e *env, atLeast time.Duration) bool {
	return ep.points >= 2 && ep.lasting(e) >= min(atLeast, e.end.Sub(e.start)/2)
}

// qualifies says whether the episode is an incident: sustained for slow, or still going on at
// the end of the range for SustainFast with a second signal agreeing. The fast window speaks
// of the present only: a short departure that has ended is a dip.
func (ep episode) qualifies(e *env, slow time.Duration, confirmed bool) bool {
	return ep.sustained(e, slow) || ep.fast(e, confirmed)
}

// fast is the fast window alone: confirmed, still going on, and lasting SustainFast.
func (ep episode) fast(e *env, confirmed bool) bool {
	return confirmed && !ep.to.Before(e.end.Add(-e.step)) && ep.sustained(e, sustainFast)
}

// longestRun finds the longest run of points where cond holds; peak is the largest value
// (below=false) or the smallest (below=true) in it. Non-finite points break a run.
func longestRun(ps []model.SamplePair, below bool, cond func(float64) bool) episode {
	var cur, best episode
	for _, p := range ps {
		v := float64(p.Value)
		if !finite(v) || !cond(v) {
			cur = episode{}
			continue
		}
		t := p.Timestamp.Time()
		if cur.points == 0 {
			cur.from, cur.peak = t, v
		}
		cur.to = t
		cur.points++
		if (!below && v > cur.peak) || (below && v < cur.peak) {
			cur.peak = v
		}
		if cur.points > best.points {
			best = cur
		}
	}
	return best
}

// within returns the finite values of s in [from, to].
func within(s *model.SampleStream, from, to time.Time) []float64 {
	var out []float64
	for _, p := range s.Values {
		if t := p.Timestamp.Time(); !t.Before(from) && !t.After(to) && finite(float64(p.Value)) {
			out = append(out, float64(p.Value))
		}
	}
	return out
}

// mean of xs; NaN when empty.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// meanOr0 and maxOr0 are the mean and the largest value of s within an episode, 0 when s
// has no points there (no series: nothing waited).
func meanOr0(s *model.SampleStream, ep episode) float64 { return inEpisode(s, ep, mean) }
func maxOr0(s *model.SampleStream, ep episode) float64 {
	return inEpisode(s, ep, func(xs []float64) float64 { return quantile(xs, 1) })
}

func inEpisode(s *model.SampleStream, ep episode, f func([]float64) float64) float64 {
	if s == nil {
		return 0
	}
	if v := f(within(s, ep.from, ep.to)); finite(v) {
		return v
	}
	return 0
}

// byKeySeries indexes a matrix by key().
func byKeySeries(m model.Matrix) map[string]*model.SampleStream {
	out := make(map[string]*model.SampleStream, len(m))
	for _, s := range m {
		out[key(s.Metric)] = s
	}
	return out
}

// when writes an episode's window for a summary: "from 13:00 to 14:30", or "since 13:00"
// when it lasts to the end of the range.
func (ep episode) when(e *env) string {
	from := ep.from.Add(-e.step)
	if from.Before(e.start) {
		from = e.start
	}
	if !ep.to.Before(e.end.Add(-e.step)) {
		return "since " + e.clock(from)
	}
	return "from " + e.clock(from) + " to " + e.clock(ep.to)
}

// clock writes a time of day, with the date when the range spans more than a day.
func (e *env) clock(t time.Time) string {
	if e.end.Sub(e.start) > 24*time.Hour {
		return t.UTC().Format("Jan 2 15:04")
	}
	return t.UTC().Format("15:04")
}
