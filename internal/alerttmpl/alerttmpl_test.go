package alerttmpl

import (
	"math"
	"strings"
	"testing"
)

// Provisioning's documented expansion: $NAME and ${NAME} replaced, unset ones empty, $$ a $.
func TestExpandProvisioning(t *testing.T) {
	env := map[string]string{"PORT": "3000", "labels": "x"}
	cases := map[string]string{
		"http://localhost:$PORT":     "http://localhost:3000",
		"${PORT}0":                   "30000",
		`{{ index $labels "a.b" }}`:  `{{ index x "a.b" }}`,
		`{{ index $$labels "a.b" }}`: `{{ index $labels "a.b" }}`,
		"pa$$word":                   "pa$word",
		"$UNSET!":                    "!",
		"no dollar":                  "no dollar",
	}
	for in, want := range cases {
		if got := ExpandProvisioning(in, env); got != want {
			t.Errorf("%q → %q, want %q", in, got, want)
		}
	}
}

func TestRender(t *testing.T) {
	in := Instance{Labels: map[string]string{"a.b": "ep"}, Values: map[string]Value{"B": {Value: 0.25}, "D": {Value: 3725}, "N": {Value: math.NaN()}}}
	cases := map[string]string{
		`{{ index $labels "a.b" }}`:                               "ep",
		`{{ humanizePercentage $values.B.Value }}`:                "25%",
		`{{ humanizeDuration $values.D.Value }}`:                  "1h2m5s",
		`{{ humanizeDuration 0.25 }}`:                             "250ms",
		`{{ printf "%.1f" $values.N.Value }}`:                     "NaN",
		`{{ with $values.X }}{{ .Value }}{{ else }}none{{ end }}`: "none",
	}
	for tmpl, want := range cases {
		got, err := Render(tmpl, in)
		if err != nil || got != want {
			t.Errorf("%s → %q, %v; want %q", tmpl, got, err, want)
		}
	}
	// A missing value reaches the functions as nil, as in Grafana: an error, not a number.
	if _, err := Render(`{{ humanizeDuration $values.X.Value }}`, in); err == nil || !strings.Contains(err.Error(), "can't convert <nil> to float") {
		t.Errorf("humanizeDuration of a missing value: %v, want the conversion error", err)
	}
	if got, _ := Render(`{{ printf "%.1f" $values.X.Value }}`, in); !strings.Contains(got, "%!f(<nil>)") {
		t.Errorf("printf of a missing value: %q, want Go's %%!f(<nil>)", got)
	}
}
