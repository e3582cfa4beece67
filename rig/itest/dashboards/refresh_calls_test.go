package dashboards_test

import (
	"fmt"
	"math"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// benchPeriod is the emulator's publish period, the timeInterval of the data sources the
// benches build (stack.Options.Step's default): the grid of instant answers.
const benchPeriod = time.Minute

// callKind names what an upstream call was for, from its path.
func callKind(p string) string {
	switch {
	case strings.HasSuffix(p, "/query_range"):
		return "range"
	case strings.HasSuffix(p, "/query"):
		return "instant"
	default:
		return "lookup"
	}
}

// cacheKey is what the results cache keys a call by, as far as the wire shows it: a range
// query's expression, step and grid phase; an instant query's expression; a lookup's path
// and matchers.
func (c upstreamCall) cacheKey() string {
	switch c.kind {
	case "range":
		step, phase := millis(c.form.Get("step")), int64(0)
		if step > 0 {
			phase = millis(c.form.Get("start")) % step
		}
		return fmt.Sprintf("range\x00%s\x00%d\x00%d", c.form.Get("query"), step, phase)
	case "instant":
		return "instant\x00" + c.form.Get("query")
	}
	return "lookup\x00" + c.path + "\x00" + strings.Join(c.form["match[]"], "\x00")
}

// sameExpr is the part of the key that names the request regardless of step or range.
func (c upstreamCall) sameExpr() string {
	if c.kind == "lookup" {
		return c.path
	}
	return c.kind + "\x00" + c.form.Get("query")
}

// millis reads a unix-seconds or step value in milliseconds, exactly as the plugin sends
// them (0 when absent).
func millis(s string) int64 {
	f, _ := strconv.ParseFloat(s, 64)
	return int64(math.Round(f * 1000))
}

// whyNotCached explains a refresh's upstream call from the calls made before it in the same
// data source's run (earlier): never asked; the last answer for its key failed; asked
// before only under another key (step, grid phase); or the answer was fetched but the
// freshness rule no longer let it be served (with its age and the grid boundaries passed
// since, on the step of a range query or the data source's publish period for the rest).
func whyNotCached(c upstreamCall, earlier []upstreamCall, period time.Duration) string {
	var last *upstreamCall
	otherKey := false
	for i := range earlier {
		e := &earlier[i]
		switch {
		case e.cacheKey() == c.cacheKey():
			last = e
		case e.sameExpr() == c.sameExpr():
			otherKey = true
		}
	}
	switch {
	case last == nil && otherKey:
		return "different key (asked before with another step or grid phase)"
	case last == nil:
		return "never cached (no earlier call reached upstream)"
	case last.status/100 != 2:
		return fmt.Sprintf("failed before (%d, %s ago)", last.status, c.start.Sub(last.start).Round(time.Second))
	}
	grid := period
	if c.kind == "range" {
		grid = time.Duration(millis(c.form.Get("step"))) * time.Millisecond
	}
	why := fmt.Sprintf("expired: fetched %s ago", c.start.Sub(last.start).Round(time.Second))
	if grid > 0 {
		passed := c.start.Truncate(grid).Sub(last.start.Truncate(grid)) / grid
		why += fmt.Sprintf(", %d boundaries of %s passed", passed, grid)
	}
	return why
}

// describeCall is one line of a refresh's call list: kind, path, the range or time asked
// (in points of its step for a range), status, bytes, why it was not served from the
// cache, and the expression (shortened).
func describeCall(c upstreamCall, earlier []upstreamCall, period time.Duration) string {
	span := ""
	switch c.kind {
	case "range":
		s, e, st := millis(c.form.Get("start")), millis(c.form.Get("end")), millis(c.form.Get("step"))
		if st > 0 {
			span = fmt.Sprintf("%4d pts", (e-s)/st+1)
		}
	case "instant":
		span = "at " + time.UnixMilli(millis(c.form.Get("time"))).UTC().Format("15:04:05")
	}
	what := c.form.Get("query")
	if c.kind == "lookup" {
		what = strings.Join(c.form["match[]"], " ")
	}
	return fmt.Sprintf("  %-7s %-22s %-11s %3d %8.1f KiB  %-58s %s", c.kind, short(path.Base(path.Dir(c.path))+"/"+path.Base(c.path), 22), span,
		c.status, float64(c.bytes)/1024, whyNotCached(c, earlier, period), short(what, 90))
}

func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// printRefreshCalls lists, for each refresh of a cached run, every upstream call it still
// made and why, then a count per reason: what stands between a refresh and no call.
func printRefreshCalls(mode, dash string, label string, r loadResult, earlier []upstreamCall, period time.Duration) {
	if len(r.calls) == 0 {
		return
	}
	fmt.Printf("%s %s refresh %s: %d upstream calls\n", mode, dash, label, len(r.calls))
	reasons := map[string]int{}
	for i, c := range r.calls {
		before := append(slices.Clip(earlier), r.calls[:i]...)
		fmt.Println(describeCall(c, before, period))
		why := whyNotCached(c, before, period)
		if k := strings.IndexAny(why, ":("); k > 0 {
			why = strings.TrimSpace(why[:k])
		}
		reasons[c.kind+" "+why]++
	}
	keys := make([]string, 0, len(reasons))
	for k := range reasons {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Printf("  = %3d %s\n", reasons[k], k)
	}
}

// formOf is a call's parameters, from the query string and a form body alike.
func formOf(u *url.URL, body []byte) url.Values {
	form, _ := url.ParseQuery(string(body))
	for k, v := range u.Query() {
		form[k] = append(form[k], v...)
	}
	return form
}
