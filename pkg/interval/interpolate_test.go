package interval

import (
	"strings"
	"testing"
	"time"
)

var sample = Result{Step: 30 * time.Second, RateInterval: 2 * time.Minute, Range: time.Hour + 600*time.Millisecond}

func TestInterpolate(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		in   string
		want string
	}{
		{"no variables", sample, `sum(rate(x{a="b"}[5m]))`, `sum(rate(x{a="b"}[5m]))`},
		{"interval", sample, "rate(x[$__interval])", "rate(x[30s])"},
		{"interval braces", sample, "rate(x[${__interval}])", "rate(x[30s])"},
		{"interval ms not read as interval", sample, "x / $__interval_ms", "x / 30000"},
		{"interval ms braces", sample, "x / ${__interval_ms}", "x / 30000"},
		{"rate interval", sample, "rate(x[$__rate_interval])", "rate(x[2m])"},
		{"rate interval braces", sample, "rate(x[${__rate_interval}])", "rate(x[2m])"},
		{"rate interval ms", sample, "$__rate_interval_ms+${__rate_interval_ms}", "120000+120000"},
		{"range rounds to seconds", sample, "increase(x[$__range])", "increase(x[3601s])"},
		{"range braces", sample, "increase(x[${__range}])", "increase(x[3601s])"},
		{"range s", sample, "x / $__range_s", "x / 3601"},
		{"range ms keeps millis", sample, "x / ${__range_ms}", "x / 3600600"},
		{"adjacent", sample, "$__interval$__range", "30s3601s"},
		{"all at once", sample, "$__interval $__interval_ms $__rate_interval $__range_s", "30s 30000 2m 3601"},
		{"fractional step stays parseable", Result{Step: 1500 * time.Millisecond}, "[$__interval]", "[1s500ms]"},
		{"long step", Result{Step: 90 * time.Minute}, "[$__interval]", "[1h30m]"},
		{"unknown suffix untouched", sample, "$__intervalX $__interval_msx", "$__intervalX $__interval_msx"},
		{"unknown name untouched", sample, "${__foo} $foo $__from", "${__foo} $foo $__from"},
		{"unclosed brace untouched", sample, "${__interval", "${__interval"},
		{"dollar alone", sample, "x$ $ $$", "x$ $ $$"},
		{"double dollar keeps one", sample, "$$__interval", "$30s"},
		{"regex anchor untouched", sample, `x{a=~"foo$"}`, `x{a=~"foo$"}`},
		{"variable in a label value", sample, `x{w="$__range"}`, `x{w="3601s"}`},
		{"multibyte around", sample, "é$__intervalé", "é30sé"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Interpolate(tc.in); got != tc.want {
				t.Fatalf("Interpolate(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestComputeThenInterpolate runs the path the plugin takes for a typical panel.
func TestComputeThenInterpolate(t *testing.T) {
	r, err := Compute(Params{From: t0, To: t0.Add(6 * time.Hour), MaxDataPoints: 720, RequestInterval: 30 * time.Second, ScrapeInterval: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Interpolate(`sum by ("aws.sagemaker.endpoint.name") (rate(x[$__rate_interval])) * $__interval_ms / ${__range_s}`)
	// 6h/720 = 30s (not below the 30s min) → rounded 30s; rate = max(30s+15s, 60s) = 1m.
	want := `sum by ("aws.sagemaker.endpoint.name") (rate(x[1m])) * 30000 / 21600`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func FuzzInterpolate(f *testing.F) {
	f.Add("rate(x[$__rate_interval])", int64(30000), int64(3600000))
	f.Add("${__interval_ms}$__range_s${__range", int64(1500), int64(0))
	f.Add("$$${__interval}}", int64(1), int64(1))
	f.Fuzz(func(t *testing.T, expr string, stepMs, rangeMs int64) {
		r := Result{
			Step:         time.Duration(stepMs) * time.Millisecond,
			RateInterval: 4 * time.Duration(stepMs) * time.Millisecond,
			Range:        time.Duration(rangeMs) * time.Millisecond,
		}
		out := r.Interpolate(expr)
		if !strings.Contains(expr, "$") && out != expr {
			t.Fatalf("changed an expression without variables: %q → %q", expr, out)
		}
		// Expanded values contain digits, which no variable name does, so a second pass
		// finds nothing left to do.
		if again := r.Interpolate(out); again != out {
			t.Fatalf("not idempotent: %q → %q → %q", expr, out, again)
		}
	})
}
