package interval

import (
	"math"
	"strconv"
	"strings"
)

// Interpolate expands Grafana's interval variables in expr, in both the $__name and
// ${__name} forms:
//
//	$__interval, $__interval_ms           the step
//	$__rate_interval, $__rate_interval_ms max(interval + scrape, 4 * scrape)
//	$__range, $__range_s, $__range_ms     To-From, rounded to whole seconds except _ms
//
// A variable is recognised by its whole name, so $__interval_ms is never read as
// $__interval followed by "_ms", and unknown names such as $__intervalX stay untouched.
func (r Result) Interpolate(expr string) string {
	if !strings.Contains(expr, "$") {
		return expr
	}
	var b strings.Builder
	b.Grow(len(expr) + 16)
	for i := 0; i < len(expr); {
		j := strings.IndexByte(expr[i:], '$')
		if j < 0 {
			b.WriteString(expr[i:])
			break
		}
		b.WriteString(expr[i : i+j])
		i += j
		name, width := variableAt(expr[i:])
		if value, ok := r.value(name); ok {
			b.WriteString(value)
			i += width
			continue
		}
		b.WriteByte('$')
		i++
	}
	return b.String()
}

// variableAt reads a $name or ${name} reference at the start of s (which begins with '$')
// and returns the name and the number of bytes the reference spans. A ${ without its
// closing brace, or a $ followed by no name, gives an empty name.
func variableAt(s string) (string, int) {
	if strings.HasPrefix(s, "${") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0
		}
		return s[2:end], end + 1
	}
	n := 1
	for n < len(s) && isNameByte(s[n]) {
		n++
	}
	return s[1:n], n
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (r Result) value(name string) (string, bool) {
	rangeSeconds := int64(math.Round(r.Range.Seconds()))
	switch name {
	case "__interval":
		return FormatDuration(r.Step), true
	case "__interval_ms":
		return strconv.FormatInt(r.Step.Milliseconds(), 10), true
	case "__rate_interval":
		return FormatDuration(r.RateInterval), true
	case "__rate_interval_ms":
		return strconv.FormatInt(r.RateInterval.Milliseconds(), 10), true
	case "__range":
		// Whole seconds, as Grafana's frontend renders it ("3600s").
		return strconv.FormatInt(rangeSeconds, 10) + "s", true
	case "__range_s":
		return strconv.FormatInt(rangeSeconds, 10), true
	case "__range_ms":
		return strconv.FormatInt(r.Range.Milliseconds(), 10), true
	}
	return "", false
}
