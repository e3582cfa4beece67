package builder

import "testing"

func TestSelectorQuoting(t *testing.T) {
	cases := []struct{ name, got, want string }{
		{"legacy label bare", label("mode"), `mode`},
		{"dotted label quoted", label(lEP), `"aws.sagemaker.endpoint.name"`},
		{"@ label quoted", label(lHost), `"@resource.host.id"`},
		{"colon metric bare", sel("vllm:num_requests_running", re(lEP, vEndpoint)), `vllm:num_requests_running{"aws.sagemaker.endpoint.name"=~"$endpoint"}`},
		{"dotted metric inside braces", sel("http.server.active_requests", eq("mode", "idle")), `{"http.server.active_requests", mode="idle"}`},
		{"no matchers", sel("Invocations"), `Invocations`},
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
