package dashboards_test

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/dashload"
)

// benchPeriod is the emulator's publish period, the timeInterval of the data sources the
// benches build (stack.Options.Step's default): the grid of instant answers.
const benchPeriod = time.Minute

// cacheKey is what the results cache keys a call by, as far as the wire shows it: a range
// query's expression, step and grid phase; an instant query's expression; a lookup's path
// and matchers.
func cacheKey(c dashload.Call) string {
	switch c.Kind {
	case "range":
		step, phase := millis(c.Form.Get("step")), int64(0)
		if step > 0 {
			phase = millis(c.Form.Get("start")) % step
		}
		return fmt.Sprintf("range\x00%s\x00%d\x00%d", c.Form.Get("query"), step, phase)
	case "instant":
		return "instant\x00" + c.Form.Get("query")
	}
	return "lookup\x00" + c.Path + "\x00" + strings.Join(c.Form["match[]"], "\x00")
}

// sameExpr is the part of the key that names the request regardless of step or range.
func sameExpr(c dashload.Call) string {
	if c.Kind == "lookup" {
		return c.Path
	}
	return c.Kind + "\x00" + c.Form.Get("query")
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
func whyNotCached(c dashload.Call, earlier []dashload.Call, period time.Duration) string {
	var last *dashload.Call
	otherKey := false
	for i := range earlier {
		e := &earlier[i]
		switch {
		case cacheKey(*e) == cacheKey(c):
			last = e
		case sameExpr(*e) == sameExpr(c):
			otherKey = true
		}
	}
	switch {
	case last == nil && otherKey:
		return "different key (asked before with another step or grid phase)"
	case last == nil:
		return "never cached (no earlier call reached upstream)"
	case last.Status/100 != 2:
		return fmt.Sprintf("failed before (%d, %s ago)", last.Status, c.Start.Sub(last.Start).Round(time.Second))
	}
	grid := period
	if c.Kind == "range" {
		grid = time.Duration(millis(c.Form.Get("step"))) * time.Millisecond
	}
	why := fmt.Sprintf("expired: fetched %s ago", c.Start.Sub(last.Start).Round(time.Second))
	if grid > 0 {
		passed := c.Start.Truncate(grid).Sub(last.Start.Truncate(grid)) / grid
		why += fmt.Sprintf(", %d boundaries of %s passed", passed, grid)
	}
	return why
}

// describeCall is one line of a refresh's call list: kind, path, the range or time asked
// (in points of its step for a range), status, bytes, why it was not served from the
// cache, and the expression (shortened).
func describeCall(c dashload.Call, earlier []dashload.Call, period time.Duration) string {
	span := ""
	switch c.Kind {
	case "range":
		s, e, st := millis(c.Form.Get("start")), millis(c.Form.Get("end")), millis(c.Form.Get("step"))
		if st > 0 {
			span = fmt.Sprintf("%4d pts", (e-s)/st+1)
		}
	case "instant":
		span = "at " + time.UnixMilli(millis(c.Form.Get("time"))).UTC().Format("15:04:05")
	}
	what := c.Form.Get("query")
	if c.Kind == "lookup" {
		what = strings.Join(c.Form["match[]"], " ")
	}
	return fmt.Sprintf("  %-7s %-22s %-11s %3d %8.1f KiB  %-58s %s", c.Kind, short(path.Base(path.Dir(c.Path))+"/"+path.Base(c.Path), 22), span,
		c.Status, float64(c.Bytes)/1024, whyNotCached(c, earlier, period), short(what, 90))
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
func printRefreshCalls(mode, dash string, label string, r dashload.Result, earlier []dashload.Call, period time.Duration) {
	if len(r.Calls) == 0 {
		return
	}
	fmt.Printf("%s %s refresh %s: %d upstream calls\n", mode, dash, label, len(r.Calls))
	reasons := map[string]int{}
	for i, c := range r.Calls {
		before := append(slices.Clip(earlier), r.Calls[:i]...)
		fmt.Println(describeCall(c, before, period))
		why := whyNotCached(c, before, period)
		if k := strings.IndexAny(why, ":("); k > 0 {
			why = strings.TrimSpace(why[:k])
		}
		reasons[c.Kind+" "+why]++
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
