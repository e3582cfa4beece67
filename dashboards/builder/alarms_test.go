package builder

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
)

// generatedPanel is the raw JSON of one panel of a generated dashboard.
func generatedPanel(t *testing.T, file string, id int) map[string]any {
	t.Helper()
	generated, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range generated {
		if g.File != file {
			continue
		}
		var d struct {
			Panels []map[string]any `json:"panels"`
		}
		if err := json.Unmarshal(g.JSON, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			if p["id"] == float64(id) {
				return p
			}
		}
	}
	t.Fatalf("no panel %d in %s", id, file)
	return nil
}

// valueMap reads the value → (text, color) options of a panel's value mappings.
func valueMap(t *testing.T, mappings any) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	list, _ := mappings.([]any)
	for _, m := range list {
		opts, _ := m.(map[string]any)["options"].(map[string]any)
		for k, v := range opts {
			r := v.(map[string]any)
			text, _ := r["text"].(string)
			color, _ := r["color"].(string)
			out[k] = [2]string{text, color}
		}
	}
	return out
}

func overrideProps(p map[string]any, matcherID, matcherOpt string) map[string]any {
	fc := p["fieldConfig"].(map[string]any)
	out := map[string]any{}
	for _, o := range fc["overrides"].([]any) {
		om := o.(map[string]any)
		m := om["matcher"].(map[string]any)
		if m["id"] == matcherID && m["options"] == matcherOpt {
			for _, pr := range om["properties"].([]any) {
				prm := pr.(map[string]any)
				out[prm["id"].(string)] = prm["value"]
			}
		}
	}
	return out
}

// The alarm tiles: one tile per row of the alarms query, coloured by severity (ALARM red,
// INSUFFICIENT_DATA amber, OK green, NO_ALARM grey "No alarm"), named by the resource, with
// threshold-fallback tiles saying so, and a click that filters the dashboard.
func TestAlarmTiles(t *testing.T) {
	p := generatedPanel(t, "performance.json", 37)
	targets := p["targets"].([]any)
	if len(targets) != 2 {
		t.Fatalf("%d targets, want A (alarm rows) and B (threshold and no-alarm rows)", len(targets))
	}
	for _, tg := range targets {
		m := tg.(map[string]any)
		if m["queryType"] != qtAlarms || m["thresholdFallback"] != true || m["endpoint"] != vEndpoint || m["inferenceComponent"] != vIC {
			t.Errorf("target %v is not the scoped alarms query with thresholdFallback", m)
		}
	}
	reduce := p["options"].(map[string]any)["reduceOptions"].(map[string]any)
	if reduce["values"] != true || reduce["fields"] != "" || reduce["limit"] != float64(maxTiles) {
		t.Errorf("reduceOptions %v: want every row's severity as a tile", reduce)
	}
	want := map[string][2]string{"0": {"No alarm", colorNoAlarm}, "1": {"OK", "green"}, "2": {"Insufficient data", colorInsufficient}, "3": {"ALARM", "red"}}
	defaults := p["fieldConfig"].(map[string]any)["defaults"].(map[string]any)
	got := valueMap(t, defaults["mappings"])
	for k, w := range want {
		if got[k] != w {
			t.Errorf("severity %s maps to %v, want %v", k, got[k], w)
		}
	}
	fallback := valueMap(t, overrideProps(p, "byFrameRefID", "B")["mappings"])
	for k, w := range want {
		label := w[0]
		if k != "0" {
			label += thresholdSuffix
		}
		if fallback[k] != [2]string{label, w[1]} {
			t.Errorf("threshold tile severity %s maps to %v, want %q in %s", k, fallback[k], label, w[1])
		}
	}
	// Rows are split by source: A keeps the alarms' rows, B the others.
	tr, _ := json.Marshal(p["transformations"])
	for _, s := range []string{`"filter":{"id":"byRefId","options":"A"}`, `"filter":{"id":"byRefId","options":"B"}`, `"type":"include"`, `"type":"exclude"`, `"fieldName":"source"`} {
		if !strings.Contains(string(tr), s) {
			t.Errorf("transformations %s lack %s", tr, s)
		}
	}
	sev := overrideProps(p, "byName", fSeverity)
	if sev["displayName"] != "${__data.fields.resource}" {
		t.Errorf("tile name %v, want the resource field", sev["displayName"])
	}
	links, _ := json.Marshal(sev["links"])
	for _, v := range []string{dashref.URLParam(dashref.VarEndpoint) + "=${__data.fields.endpoint}",
		dashref.URLParam(dashref.VarIC) + "=${__data.fields.inference_component}",
		dashref.URLParam(dashref.VarInstance) + "=${__data.fields.instance}", "${__data.fields.console_url}", "${__data.fields.alarm_url}"} {
		if !strings.Contains(string(links), v) {
			t.Errorf("tile links lack %s: %s", v, links)
		}
	}
}

// The table beside the tiles shows the hover fields and links the alarm.
func TestAlarmTable(t *testing.T) {
	p := generatedPanel(t, "performance.json", 38)
	raw, _ := json.Marshal(p)
	for _, s := range []string{`"queryType":"alarms"`, `"Alarm"`, `"Reason"`, `"Metric"`, `"Threshold"`, `"Updated"`, "${__data.fields.alarm_url}", "${__data.fields.console_url}"} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("alarms table lacks %s", s)
		}
	}
}

// Every dashboard marks alarm transitions, endpoint updates, scaling, ICE and cold starts
// through its data source variable, each following the endpoint filter and asked in the
// dashboard's regions; the PromQL ones follow the account too.
func TestAnnotations(t *testing.T) {
	generated, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range generated {
		var d struct {
			Annotations struct {
				List []struct {
					Name       string         `json:"name"`
					Enable     bool           `json:"enable"`
					Datasource map[string]any `json:"datasource"`
					Target     map[string]any `json:"target"`
					Title      string         `json:"titleFormat"`
				} `json:"list"`
			} `json:"annotations"`
		}
		if err := json.Unmarshal(g.JSON, &d); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, a := range d.Annotations.List {
			if !a.Enable || a.Datasource["type"] != querymodel.PluginID || a.Datasource["uid"] != "${datasource}" {
				t.Errorf("%s: annotation %q is off or not on ${datasource}: %v", g.File, a.Name, a.Datasource)
			}
			if !refsVar(a.Target, dashref.VarEndpoint) {
				t.Errorf("%s: annotation %q ignores the endpoint filter", g.File, a.Name)
			}
			if a.Target["region"] != vRegions {
				t.Errorf("%s: annotation %q asks region %v, want %s", g.File, a.Name, a.Target["region"], vRegions)
			}
			switch qt, _ := a.Target["queryType"].(string); qt {
			case qtAlarmHistory, qtInventory, qtChanges:
				if a.Target["format"] != formatAnnotations {
					t.Errorf("%s: annotation %q asks for format %v", g.File, a.Name, a.Target["format"])
				}
				kinds[qt]++
			case "":
				expr, _ := a.Target["expr"].(string)
				if expr == "" || a.Title == "" || a.Target["range"] != true {
					t.Errorf("%s: PromQL annotation %q needs a range expr and a title", g.File, a.Name)
				}
				if !refsVar(a.Target, varAccount) {
					t.Errorf("%s: PromQL annotation %q ignores the account filter", g.File, a.Name)
				}
				kinds["promql"]++
			default:
				t.Errorf("%s: annotation %q has query type %s", g.File, a.Name, qt)
			}
		}
		if kinds[qtAlarmHistory] != 1 || kinds[qtInventory] != 1 || kinds[qtChanges] != 1 || kinds["promql"] != 3 {
			t.Errorf("%s: annotations %v, want alarm transitions, inventory events, changes, scaling, ICE and cold starts", g.File, kinds)
		}
	}
}

// The inventory table reads the inventory query as a table and links each row's endpoint and
// IC to this dashboard, the console and the logs.
func TestInventoryTable(t *testing.T) {
	p := generatedPanel(t, "reliability.json", 26)
	targets := p["targets"].([]any)
	if len(targets) != 1 || targets[0].(map[string]any)["queryType"] != qtInventory || targets[0].(map[string]any)["format"] != formatTable {
		t.Fatalf("targets %v, want one inventory table query", targets)
	}
	for col, want := range map[string][]string{
		"Endpoint":            {dashref.URLParam(dashref.VarEndpoint) + "=${__data.fields.endpoint}", "${__data.fields.console_url}", "Endpoints*2f${__data.fields.endpoint}"},
		"Inference component": {dashref.URLParam(dashref.VarIC) + "=${__data.fields.inference_component}", "${__data.fields.console_url}", "InferenceComponents*2f${__data.fields.inference_component}"},
	} {
		links, _ := json.Marshal(overrideProps(p, "byName", col)["links"])
		for _, w := range want {
			if !strings.Contains(string(links), w) {
				t.Errorf("%s links lack %s: %s", col, w, links)
			}
		}
	}
}
