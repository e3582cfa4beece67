package dashboards_test

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
)

// The generated dashboards are read back the way Grafana reads them: panels' targets and
// the template variables' defaults, interpolated into the expressions.

// dashboard is the part of a generated dashboard these tests read.
type dashboard struct {
	Panels []struct {
		ID          int              `json:"id"`
		Type        string           `json:"type"`
		Title       string           `json:"title"`
		Description string           `json:"description"`
		Targets     []map[string]any `json:"targets"`
	} `json:"panels"`
	Annotations struct {
		List []annotation `json:"list"`
	} `json:"annotations"`
	Templates struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Query    any    `json:"query"`
			AllValue string `json:"allValue"`
			Current  struct {
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
}

// annotation is one annotation query of a generated dashboard: a target of our data source,
// PromQL (with the title template) or of the issue 11 types.
type annotation struct {
	Name        string         `json:"name"`
	Target      map[string]any `json:"target"`
	TitleFormat string         `json:"titleFormat"`
}

// labelValuesForm is the dashboards' label-values variable form: label_values(selector, "label").
var labelValuesForm = regexp.MustCompile(`^label_values\((.+), "([^"]+)"\)$`)

// decodeAll generates the dashboards and decodes each, by file name.
func decodeAll(t testing.TB) map[string]dashboard {
	t.Helper()
	generated, err := builder.All()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]dashboard, len(generated))
	for _, g := range generated {
		var d dashboard
		if err := json.Unmarshal(g.JSON, &d); err != nil {
			t.Fatalf("%s: %v", g.File, err)
		}
		out[g.File] = d
	}
	return out
}

// defaultVars are the values Grafana would interpolate on first load: the current option, or
// the All value when All is selected.
func defaultVars(d dashboard) map[string]string {
	out := map[string]string{}
	for _, v := range d.Templates.List {
		cur, _ := v.Current.Value.(string)
		if cur == "$__all" {
			cur = v.AllValue
		}
		out[v.Name] = cur
	}
	return out
}

var varRef = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// interpolate replaces $name references like Grafana's template service; unknown names (the
// backend's $__ interval variables, label_replace's $1) stay as written.
func interpolate(expr string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		if v, ok := vars[ref[1:]]; ok {
			return v
		}
		return ref
	})
}
