// Package alerttmpl does to an alert rule's labels and annotations what Grafana does, for the
// tests of the generated rules: file provisioning's environment-variable expansion, then the
// Go template Grafana renders for every alert instance. Written from Grafana's documentation
// (provisioning: "$ENV_VAR_NAME or ${ENV_VAR_NAME}", "$$" for a literal $; alerting templates:
// $labels, $values with .Labels and .Value, $value, and Prometheus' humanize functions).
// Only tests import it.
package alerttmpl

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// ExpandProvisioning is a field value as Grafana's file provisioning reads it: $NAME and
// ${NAME} become env's value of NAME (empty when env has none), $$ a literal $.
func ExpandProvisioning(s string, env map[string]string) string {
	parts := strings.Split(s, "$$")
	for i, p := range parts {
		parts[i] = os.Expand(p, func(name string) string { return env[name] })
	}
	return strings.Join(parts, "$")
}

// Value is one entry of $values: a reduce, math or threshold expression's labels and value
// (NaN when the expression gave no number).
type Value struct {
	Labels map[string]string
	Value  float64
}

// Instance is what one alert instance's templates see. Values lacks an expression when the
// evaluation returned no data or failed.
type Instance struct {
	Labels map[string]string
	Values map[string]Value
	Value  string
}

// Render expands tmpl for in: text/template with $labels, $values and $value set, and the
// template functions the rules use.
func Render(tmpl string, in Instance) (string, error) {
	t, err := template.New("alert").Funcs(funcs).Parse("{{- $labels := .Labels -}}{{- $values := .Values -}}{{- $value := .Value -}}" + tmpl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, in); err != nil {
		return "", err
	}
	return b.String(), nil
}

var funcs = template.FuncMap{
	// A ratio as a percentage: 0.1234 → "12.34%".
	"humanizePercentage": func(v any) (string, error) {
		f, err := toFloat(v)
		return fmt.Sprintf("%.4g%%", f*100), err
	},
	// Seconds as hours, minutes and seconds: 3725 → "1h2m5s"; below a second in ms.
	"humanizeDuration": func(v any) (string, error) {
		f, err := toFloat(v)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%.4g", f), err
		}
		if math.Abs(f) < 1 {
			return fmt.Sprintf("%.4gms", f*1000), nil
		}
		return time.Duration(f * float64(time.Second)).Round(time.Second).String(), nil
	},
}

// toFloat takes the values Grafana's functions accept (numbers, numeric strings); anything
// else, a missing value (nil) included, is an error that fails the rendering.
func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case string:
		return strconv.ParseFloat(x, 64)
	}
	return 0, fmt.Errorf("can't convert %T to float", v)
}
