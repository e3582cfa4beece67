package interval

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
		if got := Round(tc.in); got != tc.want {
			t.Errorf("Round(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRoundMatchesSDK sweeps the whole table against the plugin SDK's own (Apache-2.0)
// gtime.RoundInterval, an independent implementation of the same Grafana behaviour.
func TestRoundMatchesSDK(t *testing.T) {
	for d := time.Duration(0); d < 3*year; {
		if got, want := Round(d), gtime.RoundInterval(d); got != want {
			t.Fatalf("Round(%v) = %v, SDK says %v", d, got, want)
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
		p       Params
		want    Result
		wantErr string
	}{
		{
			name: "1h default points falls back to 15s",
			p:    Params{From: t0, To: t0.Add(time.Hour)},
			want: Result{Step: 15 * time.Second, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: time.Hour},
		},
		{
			name: "24h 1000 points rounds 86.4s to 1m",
			p:    Params{From: t0, To: t0.Add(24 * time.Hour), MaxDataPoints: 1000, RequestInterval: 15 * time.Second},
			want: Result{Step: time.Minute, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: 24 * time.Hour},
		},
		{
			name: "7d 100 points rounds 100.8m to 2h",
			p:    Params{From: t0, To: t0.Add(7 * 24 * time.Hour), MaxDataPoints: 100},
			want: Result{Step: 2 * time.Hour, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: 7 * 24 * time.Hour},
		},
		{
			name: "safe resolution wins over many points",
			p:    Params{From: t0, To: t0.Add(30 * 24 * time.Hour), MaxDataPoints: 100000, QueryInterval: "1s"},
			want: Result{Step: 5 * time.Minute, MinInterval: time.Second, RateInterval: 4 * time.Second, Range: 30 * 24 * time.Hour},
		},
		{
			name: "query min step beats request interval and sets the rate scrape",
			p:    Params{From: t0, To: t0.Add(time.Hour), QueryInterval: "1m", RequestInterval: 20 * time.Second, ScrapeInterval: 30 * time.Second},
			want: Result{Step: time.Minute, MinInterval: time.Minute, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "min interval is used unrounded",
			p:    Params{From: t0, To: t0.Add(time.Hour), QueryInterval: "7s"},
			want: Result{Step: 7 * time.Second, MinInterval: 7 * time.Second, RateInterval: 28 * time.Second, Range: time.Hour},
		},
		{
			name: "calculated above min is rounded",
			p:    Params{From: t0, To: t0.Add(6 * time.Hour), QueryInterval: "10s"},
			want: Result{Step: 15 * time.Second, MinInterval: 10 * time.Second, RateInterval: 40 * time.Second, Range: 6 * time.Hour},
		},
		{
			name: "$__interval as min step is ignored and rate uses the step",
			p:    Params{From: t0, To: t0.Add(time.Hour), QueryInterval: "$__interval", RequestInterval: 30 * time.Second},
			want: Result{Step: 30 * time.Second, MinInterval: 30 * time.Second, RateInterval: 2 * time.Minute, Range: time.Hour},
		},
		{
			name: "${__interval_ms} as min step is ignored",
			p:    Params{From: t0, To: t0.Add(time.Hour), QueryInterval: "${__interval_ms}", ScrapeInterval: time.Minute},
			want: Result{Step: time.Minute, MinInterval: time.Minute, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "$__rate_interval step is final and ignores the factor",
			p:    Params{From: t0, To: t0.Add(time.Hour), QueryInterval: "$__rate_interval", ScrapeInterval: 30 * time.Second, IntervalFactor: 3},
			want: Result{Step: 2 * time.Minute, MinInterval: 30 * time.Second, RateInterval: 2 * time.Minute, Range: time.Hour},
		},
		{
			name: "${__rate_interval} step over a long range adds one scrape",
			p:    Params{From: t0, To: t0.Add(24 * time.Hour), MaxDataPoints: 100, QueryInterval: "${__rate_interval}"},
			want: Result{Step: 15*time.Minute + 15*time.Second, MinInterval: 15 * time.Second, RateInterval: 15*time.Minute + 15*time.Second, Range: 24 * time.Hour},
		},
		{
			name: "interval factor multiplies",
			p:    Params{From: t0, To: t0.Add(time.Hour), IntervalFactor: 2},
			want: Result{Step: 30 * time.Second, MinInterval: 15 * time.Second, RateInterval: time.Minute, Range: time.Hour},
		},
		{
			name: "0s min step falls through to the datasource scrape interval",
			p:    Params{From: t0, To: t0.Add(time.Hour), QueryInterval: "0s", ScrapeInterval: time.Minute},
			want: Result{Step: time.Minute, MinInterval: time.Minute, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "request interval beats datasource scrape interval",
			p:    Params{From: t0, To: t0.Add(time.Hour), RequestInterval: 5 * time.Second, ScrapeInterval: time.Minute},
			want: Result{Step: 5 * time.Second, MinInterval: 5 * time.Second, RateInterval: 4 * time.Minute, Range: time.Hour},
		},
		{
			name: "empty range gives the min interval",
			p:    Params{From: t0, To: t0},
			want: Result{Step: 15 * time.Second, MinInterval: 15 * time.Second, RateInterval: time.Minute},
		},
		{
			name:    "bad min step names the problem",
			p:       Params{From: t0, To: t0.Add(time.Hour), QueryInterval: "fast"},
			wantErr: `query min step: invalid duration "fast"`,
		},
		{
			name:    "reversed range",
			p:       Params{From: t0.Add(time.Hour), To: t0},
			wantErr: "ends before it starts",
		},
		{
			name:    "overflowing factor",
			p:       Params{From: t0, To: t0.Add(time.Hour), IntervalFactor: 1 << 62},
			wantErr: "overflow",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compute(tc.p)
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
				t.Fatalf("Compute = %+v\nwant      %+v", got, tc.want)
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
			got := Align(tc.t, tc.step, tc.offset)
			if !got.Equal(tc.want) {
				t.Fatalf("Align(%v, %v, %d) = %v, want %v", tc.t, tc.step, tc.offset, got, tc.want)
			}
			if got.After(tc.t) {
				t.Fatalf("Align moved %v forward to %v", tc.t, got)
			}
		})
	}
}

func TestIsVariable(t *testing.T) {
	for _, s := range []string{"$__interval", "${__interval}", "$__interval_ms", "${__interval_ms}", "$__rate_interval", "${__rate_interval}", "$__rate_interval_ms", "${__rate_interval_ms}"} {
		if !IsVariable(s) {
			t.Errorf("IsVariable(%q) = false", s)
		}
	}
	for _, s := range []string{"", "15s", "$__range", "$interval", "__interval"} {
		if IsVariable(s) {
			t.Errorf("IsVariable(%q) = true", s)
		}
	}
}
