// Package dashload opens the generated dashboards as a browser does (the variables'
// lookups, then every panel at once) against a data source, in process or a plugin
// process, and meters what reached upstream through a reverse proxy: the load benches and
// the replicas' bench share it.
package dashload

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
)

// Board is the part of a generated dashboard the tests read.
type Board struct {
	Panels []struct {
		ID          int              `json:"id"`
		Type        string           `json:"type"`
		Title       string           `json:"title"`
		Description string           `json:"description"`
		Targets     []map[string]any `json:"targets"`
	} `json:"panels"`
	Annotations struct {
		List []Annotation `json:"list"`
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

// Annotation is one annotation query of a generated dashboard: a target of our data
// source, PromQL (with the title template) or of the AWS API types.
type Annotation struct {
	Name        string         `json:"name"`
	Target      map[string]any `json:"target"`
	TitleFormat string         `json:"titleFormat"`
}

// LabelValuesForm is the dashboards' label-values variable form: label_values(selector, "label").
var LabelValuesForm = regexp.MustCompile(`^label_values\((.+), "([^"]+)"\)$`)

// Generated generates the dashboards and decodes each, by file name.
func Generated(tb testing.TB) map[string]Board {
	tb.Helper()
	generated, err := builder.All()
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]Board, len(generated))
	for _, g := range generated {
		var d Board
		if err := json.Unmarshal(g.JSON, &d); err != nil {
			tb.Fatalf("%s: %v", g.File, err)
		}
		out[g.File] = d
	}
	return out
}

// DefaultVars are the values Grafana would interpolate on first load: the current option,
// or the All value when All is selected.
func DefaultVars(d Board) map[string]string {
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

// Interpolate replaces $name references like Grafana's template service; unknown names
// (the backend's $__ interval variables, label_replace's $1) stay as written.
func Interpolate(expr string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		if v, ok := vars[ref[1:]]; ok {
			return v
		}
		return ref
	})
}

// InterpolateTarget interpolates every string field of a target.
func InterpolateTarget(tg map[string]any, vars map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range tg {
		if s, ok := v.(string); ok {
			v = Interpolate(s, vars)
		}
		out[k] = v
	}
	return out
}

// AWSTypes are the query types that read CloudWatch alarms and the SageMaker inventory
// (issue 11) through AWS APIs rather than PromQL.
var AWSTypes = []string{"alarms", "alarmHistory", "inventory"}

// AWSTarget says whether a target is of one of AWSTypes.
func AWSTarget(tg map[string]any) bool {
	qt, _ := tg["queryType"].(string)
	return slices.Contains(AWSTypes, qt)
}
