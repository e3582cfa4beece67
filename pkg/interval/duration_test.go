package interval

import (
	"strings"
	"testing"
	"time"
)

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
