package models

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/gtime"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func TestRoundTable(t *testing.T) {
	tests := []struct {
		in, want time.Duration
	}{
		{0, time.Millisecond},
		{10 * time.Millisecond, time.Millisecond},
		{11 * time.Millisecond, 10 * time.Millisecond},
		{327 * time.Millisecond, 200 * time.Millisecond},
		{351 * time.Millisecond, 500 * time.Millisecond},
		{2400 * time.Millisecond, 2 * time.Second},
		{7850 * time.Millisecond, 10 * time.Second},
		{14400 * time.Millisecond, 15 * time.Second},
		{17500 * time.Millisecond, 15 * time.Second},
		{17501 * time.Millisecond, 20 * time.Second},
		{86400 * time.Millisecond, time.Minute},
		{90 * time.Second, time.Minute},
		{91 * time.Second, 2 * time.Minute},
		{6048 * time.Second, 2 * time.Hour},
		{10 * time.Hour, 12 * time.Hour},
		{30 * time.Hour, 24 * time.Hour},
		{6 * 24 * time.Hour, 24 * time.Hour},
		{10 * 24 * time.Hour, week},
		{30 * 24 * time.Hour, 30 * day},
		{6 * week, 30 * day},
		{2*year - time.Millisecond, 30 * day},
		{2 * year, year},
		{100 * year, year},
	}
	for _, tc := range tests {
		if got := RoundInterval(tc.in); got != tc.want {
			t.Errorf("RoundInterval(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRoundMatchesSDK sweeps the whole table against the plugin SDK's own (Apache-2.0)
// gtime.RoundInterval, an independent implementation of the same Grafana behaviour.
func TestRoundMatchesSDK(t *testing.T) {
	for d := time.Duration(0); d < 3*year; {
		if got, want := RoundInterval(d), gtime.RoundInterval(d); got != want {
			t.Fatalf("RoundInterval(%v) = %v, SDK says %v", d, got, want)
		}
		switch {
		case d < 2*time.Second:
			d += time.Millisecond
		case d < 3*time.Hour:
			d += 500 * time.Millisecond
		case d < 4*week:
			d += time.Minute
		default:
			d += time.Hour
		}
	}
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name    string
		p       IntervalParams
		want    Interval
		wantErr string
	}{
		{
			name: "1h default points falls back to 15s",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour)},
			want: Interval{Step: 15 * time.Second, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: time.Hour},
		},
		{
			name: "24h 1000 points rounds 86.4s to 1m",
			p:    IntervalParams{From: t0, To: t0.Add(24 * time.Hour), MaxDataPoints: 1000, RequestInterval: 15 * time.Second},
			want: Interval{Step: time.Minute, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: 24 * time.Hour},
		},
		{
			name: "7d 100 points rounds 100.8m to 2h",
			p:    IntervalParams{From: t0, To: t0.Add(7 * 24 * time.Hour), MaxDataPoints: 100},
			want: Interval{Step: 2 * time.Hour, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: 7 * 24 * time.Hour},
		},
		{
			name: "safe resolution wins over many points",
			p:    IntervalParams{From: t0, To: t0.Add(30 * 24 * time.Hour), MaxDataPoints: 100000, QueryInterval: "1s"},
			want: Interval{Step: 5 * time.Minute, MinInterval: time.Second, RateInterval: 4 * time.Second, Range: 30 * 24 * time.Hour},
		},
		{
			name: "query min step beats request interval and sets the rate scrape",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), QueryInterval: "1m", RequestInterval: 20 * time.Second, ScrapeInterval: 30 * time.Second},
			want: Interval{Step: time.Minute, MinInterval: time.Minute, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "min interval is used unrounded",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), QueryInterval: "7s"},
			want: Interval{Step: 7 * time.Second, MinInterval: 7 * time.Second, RateInterval: 28 * time.Second, Range: time.Hour},
		},
		{
			name: "calculated above min is rounded",
			p:    IntervalParams{From: t0, To: t0.Add(6 * time.Hour), QueryInterval: "10s"},
			want: Interval{Step: 15 * time.Second, MinInterval: 10 * time.Second, RateInterval: 40 * time.Second, Range: 6 * time.Hour},
		},
		{
			name: "$__interval as min step is ignored and rate uses the step",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), QueryInterval: "$__interval", RequestInterval: 30 * time.Second},
			want: Interval{Step: 30 * time.Second, MinInterval: 30 * time.Second, RateInterval: 2 * time.Minute, Range: time.Hour},
		},
		{
			name: "${__interval_ms} as min step is ignored",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), QueryInterval: "${__interval_ms}", ScrapeInterval: time.Minute},
			want: Interval{Step: time.Minute, MinInterval: time.Minute, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "$__rate_interval step is final and ignores the factor",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), QueryInterval: "$__rate_interval", ScrapeInterval: 30 * time.Second, IntervalFactor: 3},
			want: Interval{Step: 2 * time.Minute, MinInterval: 30 * time.Second, RateInterval: 2 * time.Minute, Range: time.Hour},
		},
		{
			name: "${__rate_interval} step over a long range adds one scrape",
			p:    IntervalParams{From: t0, To: t0.Add(24 * time.Hour), MaxDataPoints: 100, QueryInterval: "${__rate_interval}"},
			want: Interval{Step: 15*time.Minute + 15*time.Second, MinInterval: 15 * time.Second, RateInterval: 15*time.Minute + 15*time.Second, Range: 24 * time.Hour},
		},
		{
			name: "interval factor multiplies",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), IntervalFactor: 2},
			want: Interval{Step: 30 * time.Second, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: time.Hour},
		},
		{
			name: "0s min step falls through to the datasource scrape interval",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), QueryInterval: "0s", ScrapeInterval: time.Minute},
			want: Interval{Step: time.Minute, MinInterval: time.Minute, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "request interval beats datasource scrape interval",
			p:    IntervalParams{From: t0, To: t0.Add(time.Hour), RequestInterval: 5 * time.Second, ScrapeInterval: time.Minute},
			want: Interval{Step: 5 * time.Second, MinInterval: 5 * time.Second, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "empty range gives the min interval",
			p:    IntervalParams{From: t0, To: t0},
			want: Interval{Step: 15 * time.Second, MinInterval: 15 * time.Second, RateInterval: time.Minute},
		},
		{
			name:    "bad min step names the problem",
			p:       IntervalParams{From: t0, To: t0.Add(time.Hour), QueryInterval: "fast"},
			wantErr: `query min step: invalid duration "fast"`,
		},
		{
			name:    "reversed range",
			p:       IntervalParams{From: t0.Add(time.Hour), To: t0},
			wantErr: "ends before it starts",
		},
		{
			name:    "overflowing factor",
			p:       IntervalParams{From: t0, To: t0.Add(time.Hour), IntervalFactor: 1 << 62},
			wantErr: "overflow",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ComputeInterval(tc.p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("ComputeInterval = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}

func TestAlign(t *testing.T) {
	tests := []struct {
		name   string
		t      time.Time
		step   time.Duration
		offset int64
		want   time.Time
	}{
		{"floors to the step", t0.Add(7*time.Minute + 30*time.Second), 5 * time.Minute, 0, t0.Add(5 * time.Minute)},
		{"aligned stays", t0, 5 * time.Minute, 0, t0},
		{"daily step at local midnight east of UTC", t0, 24 * time.Hour, 3600, time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)},
		{"daily step at local midnight west of UTC", time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), 24 * time.Hour, -5 * 3600, time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)},
		{"odd step", time.Unix(76, 0), 7 * time.Second, 0, time.Unix(70, 0)},
		{"odd step with offset", time.Unix(76, 0), 7 * time.Second, 2, time.Unix(75, 0)},
		{"before 1970 floors downwards", time.Unix(-1, 0), time.Minute, 0, time.Unix(-60, 0).UTC()},
		{"zero step leaves the time alone", t0.Add(time.Second), 0, 3600, t0.Add(time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AlignToStep(tc.t, tc.step, tc.offset)
			if !got.Equal(tc.want) {
				t.Fatalf("AlignToStep(%v, %v, %d) = %v, want %v", tc.t, tc.step, tc.offset, got, tc.want)
			}
			if got.After(tc.t) {
				t.Fatalf("AlignToStep moved %v forward to %v", tc.t, got)
			}
		})
	}
}

func TestIsVariable(t *testing.T) {
	for _, s := range []string{"$__interval", "${__interval}", "$__interval_ms", "${__interval_ms}", "$__rate_interval", "${__rate_interval}", "$__rate_interval_ms", "${__rate_interval_ms}"} {
		if !IsIntervalVariable(s) {
			t.Errorf("IsIntervalVariable(%q) = false", s)
		}
	}
	for _, s := range []string{"", "15s", "$__range", "$interval", "__interval"} {
		if IsIntervalVariable(s) {
			t.Errorf("IsIntervalVariable(%q) = true", s)
		}
	}
}

var sample = Interval{Step: 30 * time.Second, RateInterval: 2 * time.Minute, Range: time.Hour + 600*time.Millisecond}

func TestInterpolate(t *testing.T) {
	tests := []struct {
		name string
		r    Interval
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
		{"fractional step stays parseable", Interval{Step: 1500 * time.Millisecond}, "[$__interval]", "[1s500ms]"},
		{"long step", Interval{Step: 90 * time.Minute}, "[$__interval]", "[1h30m]"},
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
	r, err := ComputeInterval(IntervalParams{From: t0, To: t0.Add(6 * time.Hour), MaxDataPoints: 720, RequestInterval: 30 * time.Second, ScrapeInterval: 15 * time.Second})
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
		r := Interval{
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

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "15s", want: 15 * time.Second},
		{in: "1m", want: time.Minute},
		{in: "1m30s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "1s500ms", want: 1500 * time.Millisecond},
		{in: "1.5m", want: 90 * time.Second},
		{in: "1d", want: 24 * time.Hour},
		{in: "2w", want: 14 * 24 * time.Hour},
		{in: "1y", want: 365 * 24 * time.Hour},
		{in: "30", want: 30 * time.Second},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: "0s", want: 0},
		{in: ">10s", want: 10 * time.Second},
		{in: " <1m ", want: time.Minute},
		{in: "", wantErr: "empty duration"},
		{in: ">", wantErr: "empty duration"},
		{in: "abc", wantErr: `invalid duration "abc"`},
		{in: "10", want: 10 * time.Second},
		{in: "10x", wantErr: "use a number with a unit"},
		{in: "s", wantErr: "invalid duration"},
		{in: "1.2.3s", wantErr: "invalid duration"},
		{in: ".", wantErr: "invalid duration"},
		{in: "-5s", wantErr: "invalid duration"},
		{in: "NaN", wantErr: "invalid duration"},
		{in: "Inf", wantErr: "invalid duration"},
		{in: "1e3", wantErr: "invalid duration"},
		{in: "999999999y", wantErr: "too large"},
		{in: "99999999999999999999", wantErr: "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseDuration(%q) error = %v, want it to contain %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDuration(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseDuration(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{time.Microsecond, "0s"},
		{time.Millisecond, "1ms"},
		{500 * time.Millisecond, "500ms"},
		{1500 * time.Millisecond, "1s500ms"},
		{15 * time.Second, "15s"},
		{time.Minute, "1m"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{24 * time.Hour, "1d"},
		{25*time.Hour + time.Second, "1d1h1s"},
		{365 * 24 * time.Hour, "365d"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			got := FormatDuration(tc.in)
			if got != tc.want {
				t.Fatalf("FormatDuration(%v) = %q, want %q", tc.in, got, tc.want)
			}
			if tc.in >= time.Millisecond {
				back, err := ParseDuration(got)
				if err != nil || back != tc.in.Truncate(time.Millisecond) {
					t.Fatalf("round trip of %q = %v, %v; want %v", got, back, err, tc.in)
				}
			}
		})
	}
}
