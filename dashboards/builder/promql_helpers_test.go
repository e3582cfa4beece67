package builder

import "testing"

func TestBuilderHelpers(t *testing.T) {
	cases := []struct{ name, got, want string }{
		{"grouping", sumBy([]string{lHost, "mode"}, "x"), `sum by ("@resource.host.id", mode) (x)`},
		{"no grouping", sumBy(nil, "x"), `sum (x)`},
		{"aggregation variable quoted", byAgg("max", "x", lAZ), `max by ("$agg", "@resource.cloud.availability_zone") (x)`},
		{"delta rate", deltaPerSecond(nil, "Invocations"), `sum (sum_over_time(Invocations[5m])) / 300`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Fatalf("got %s, want %s", c.got, c.want)
			}
		})
	}
}
