package builder

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/inferscope/sagemaker-datasource/internal/alerttmpl"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

// provisioned is a file rule as Grafana stores it: file provisioning expands environment
// variables in these fields (no variable set here) and reads annotations and query models raw.
func provisioned(r fileRule) fileRule {
	x := func(s string) string { return alerttmpl.ExpandProvisioning(s, nil) }
	out := r
	out.UID, out.Title, out.Condition, out.DashboardUID = x(r.UID), x(r.Title), x(r.Condition), x(r.DashboardUID)
	out.NoDataState, out.ExecErrState, out.For = x(r.NoDataState), x(r.ExecErrState), x(r.For)
	out.Labels = map[string]string{}
	for k, v := range r.Labels {
		out.Labels[k] = x(v)
	}
	out.Data = nil
	for _, q := range r.Data {
		q.RefID, q.DatasourceUID = x(q.RefID), x(q.DatasourceUID)
		out.Data = append(out.Data, q)
	}
	return out
}

// The file, once Grafana's provisioning has expanded it, holds the rules the HTTP API
// rendering holds: the file escapes exactly what provisioning expands and the API nothing.
func TestFileAndAPIRulesAgreeOnceProvisioned(t *testing.T) {
	f := fileDoc(t, "my-ds")
	api := apiDoc(t, "my-ds")
	byUID := map[string]fileRule{}
	for _, g := range f.Groups {
		if alerttmpl.ExpandProvisioning(g.Folder, nil) != api.Folder.Title {
			t.Errorf("group %s: folder %q, want %q", g.Name, g.Folder, api.Folder.Title)
		}
		for _, r := range g.Rules {
			byUID[r.UID] = provisioned(r)
		}
	}
	n := 0
	for _, g := range api.Groups {
		for _, r := range g.Rules {
			n++
			fr, ok := byUID[*r.Uid]
			if !ok {
				t.Errorf("%s: in the API rules, not in the file", *r.Uid)
				continue
			}
			if fr.Title != r.Title || fr.For != r.For || fr.Condition != r.Condition {
				t.Errorf("%s: file has title %q for %q condition %q, API %q %q %q", *r.Uid, fr.Title, fr.For, fr.Condition, r.Title, r.For, r.Condition)
			}
			if !maps.Equal(fr.Labels, r.Labels) {
				t.Errorf("%s: labels once provisioned %v, API %v", *r.Uid, fr.Labels, r.Labels)
			}
			want := map[string]string{}
			for k, v := range r.Annotations {
				want[k] = v
			}
			if want[annotationDashboard] != fr.DashboardUID || want[annotationPanel] != strconv.Itoa(fr.PanelID) {
				t.Errorf("%s: file links panel %s/%d, API %s/%s", *r.Uid, fr.DashboardUID, fr.PanelID, want[annotationDashboard], want[annotationPanel])
			}
			delete(want, annotationDashboard)
			delete(want, annotationPanel)
			if !maps.Equal(fr.Annotations, want) {
				t.Errorf("%s: annotations %v, API %v", *r.Uid, fr.Annotations, want)
			}
			for k, v := range fr.Annotations {
				// Newer Grafana expands ${NAME} in annotations too; none may look like one.
				if strings.Contains(v, "${") {
					t.Errorf("%s: annotation %s holds ${, which newer Grafana expands: %s", *r.Uid, k, v)
				}
			}
			for i, q := range r.Data {
				fq := fr.Data[i]
				if fq.RefID != *q.RefId || fq.DatasourceUID != *q.DatasourceUid {
					t.Errorf("%s: query %d is %s on %s in the file, %s on %s in the API", *r.Uid, i, fq.RefID, fq.DatasourceUID, *q.RefId, *q.DatasourceUid)
				}
				raw, _ := json.Marshal(q.Model)
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				if fq.Model["expr"] != m["expr"] {
					t.Errorf("%s: query %s's expression differs between the file and the API", *r.Uid, fq.RefID)
				}
			}
		}
	}
	if n != len(byUID) || n == 0 {
		t.Errorf("%d API rules, %d file rules", n, len(byUID))
	}
}

// Each rule's labels and annotations rendered the way Grafana renders them for an alert
// instance, as file provisioning stores them and as the HTTP API does: a firing instance
// carries the resource's names; one without values (no data, an error) or with a NaN value
// renders without Go's or Grafana's error marks.
func TestRulesRenderInGrafana(t *testing.T) {
	specs := map[string]alertRule{}
	for _, s := range append(alertRules(diagnosis.DefaultConfig()), sloAlertRules(defaultSLOs())...) {
		specs[s.uid] = s
	}
	type stored struct {
		how, uid            string
		labels, annotations map[string]string
	}
	var rules []stored
	for _, g := range apiDoc(t, "my-ds").Groups {
		for _, r := range g.Rules {
			rules = append(rules, stored{"api", *r.Uid, r.Labels, r.Annotations})
		}
	}
	for _, g := range fileDoc(t, "my-ds").Groups {
		for _, r := range g.Rules {
			p := provisioned(r)
			rules = append(rules, stored{"file", p.UID, p.Labels, p.Annotations})
		}
	}
	for _, r := range rules {
		s, ok := specs[r.uid]
		if !ok {
			t.Fatalf("%s rule %s has no spec", r.how, r.uid)
		}
		series := map[string]string{"__name__": "ignored"}
		for _, res := range s.resource {
			series[res.seriesLabel] = "my-" + res.alertLabel
		}
		cases := []struct {
			name string
			in   alerttmpl.Instance
		}{
			{"firing", alerttmpl.Instance{Labels: series, Values: map[string]alerttmpl.Value{
				"B": {Labels: series, Value: s.threshold * 1.5}, "C": {Labels: series, Value: 1}}, Value: "[ var='B' ]"}},
			{"no values", alerttmpl.Instance{Labels: map[string]string{}, Values: map[string]alerttmpl.Value{}}},
			{"NaN", alerttmpl.Instance{Labels: series, Values: map[string]alerttmpl.Value{"B": {Labels: series, Value: math.NaN()}}}},
		}
		for _, c := range cases {
			what := r.how + " " + r.uid + " " + c.name
			labels := renderAll(t, what+" label", r.labels, c.in)
			renderAll(t, what+" annotation", r.annotations, c.in)
			if c.name != "firing" {
				continue
			}
			for _, res := range s.resource {
				if got := labels[res.alertLabel]; got != "my-"+res.alertLabel {
					t.Errorf("%s: label %s=%q, want %q", what, res.alertLabel, got, "my-"+res.alertLabel)
				}
			}
			if labels["severity"] != s.severity {
				t.Errorf("%s: severity %q, want %q", what, labels["severity"], s.severity)
			}
		}
	}
}

// renderAll renders every template of m and fails on an error or an error mark in the output.
func renderAll(t *testing.T, what string, m map[string]string, in alerttmpl.Instance) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range m {
		got, err := alerttmpl.Render(v, in)
		if err != nil {
			t.Errorf("%s %s: %v", what, k, err)
			continue
		}
		for _, mark := range []string{"<nil>", "%!", "<no value>", "{{"} {
			if strings.Contains(got, mark) {
				t.Errorf("%s %s renders %q: %s", what, k, mark, got)
			}
		}
		out[k] = got
	}
	return out
}

// The rules' folder is never the dashboards' folder: the rule file names its folder by
// title only, so with the dashboards' title the alert provisioner, when it runs first,
// would create the dashboards' folder with a uid of its own. Every group and rule names
// the rules' own folder.
func TestRulesKeepOutOfTheDashboardsFolder(t *testing.T) {
	raw, err := os.ReadFile("../../provisioning/dashboards/dashboards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var prov struct {
		Providers []struct {
			Folder    string `yaml:"folder"`
			FolderUID string `yaml:"folderUid"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(raw, &prov); err != nil {
		t.Fatal(err)
	}
	if len(prov.Providers) != 1 || prov.Providers[0].FolderUID == "" {
		t.Fatalf("want one dashboards provider naming its folder uid, got %+v", prov.Providers)
	}
	p := prov.Providers[0]
	api := apiDoc(t, "my-ds")
	if api.Folder.Title == p.Folder || api.Folder.UID == p.FolderUID {
		t.Errorf("the rules' folder %q (uid %q) is the dashboards' folder %q (uid %q)", api.Folder.Title, api.Folder.UID, p.Folder, p.FolderUID)
	}
	for _, g := range api.Groups {
		if *g.FolderUid != api.Folder.UID {
			t.Errorf("group %s in folder uid %s, want %s", *g.Title, *g.FolderUid, api.Folder.UID)
		}
		for _, r := range g.Rules {
			if r.FolderUID != api.Folder.UID || r.RuleGroup != *g.Title {
				t.Errorf("%s: folder uid %s group %s, want %s %s", *r.Uid, r.FolderUID, r.RuleGroup, api.Folder.UID, *g.Title)
			}
		}
	}
	f := fileDoc(t, "my-ds")
	for _, g := range f.Groups {
		if g.Folder != api.Folder.Title {
			t.Errorf("file group %s in folder %q, want %q", g.Name, g.Folder, api.Folder.Title)
		}
	}
}

// fileDoc is the file rendering as written (before provisioning expands it).
func fileDoc(t *testing.T, uid string) alertFile {
	t.Helper()
	out, err := RenderAlertRules(FormatFile, uid)
	if err != nil {
		t.Fatal(err)
	}
	var f alertFile
	if err := yaml.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	return f
}

func apiDoc(t *testing.T, uid string) apiRules {
	t.Helper()
	out, err := RenderAlertRules(FormatAPI, uid)
	if err != nil {
		t.Fatal(err)
	}
	var doc apiRules
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Groups) == 0 {
		t.Fatal("no rule groups")
	}
	return doc
}
