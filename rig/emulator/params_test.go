package emulator

import (
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// TestParseTimeKeepsMilliseconds: every millisecond of a second, sent as float seconds
// the way Grafana and the plugin send them, is read back as that millisecond, as
// Prometheus' API reads it (not one short: 0.123 is 0.12299999… as a float).
func TestParseTimeKeepsMilliseconds(t *testing.T) {
	base := int64(1_790_000_000_000)
	for ms := range int64(1000) {
		want := base + ms
		v := strconv.FormatFloat(float64(want)/1000, 'f', -1, 64)
		r := httptest.NewRequest("GET", "/api/v1/query?"+url.Values{"time": {v}}.Encode(), nil)
		if err := r.ParseForm(); err != nil {
			t.Fatal(err)
		}
		got, aerr := parseTime(r, "time", time.Time{})
		if aerr != nil {
			t.Fatalf("%s: %v", v, aerr)
		}
		if got.UnixMilli() != want || got.Nanosecond()%int(time.Millisecond) != 0 {
			t.Errorf("time=%s read as %s (%d ms), want %d ms", v, got.Format(time.RFC3339Nano), got.UnixMilli(), want)
		}
	}
}
