package builder

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
)

// The committed JSON (provisioned and bundled) must be exactly what the generator produces.
func TestCommittedJSONIsGenerated(t *testing.T) {
	generated, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"../../provisioning/dashboards", "../../src/dashboards"} {
		for _, g := range generated {
			path := filepath.Join(dir, g.File)
			t.Run(path, func(t *testing.T) {
				have, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v; run go run ./dashboards/cmd/gen", err)
				}
				if !bytes.Equal(have, g.JSON) {
					t.Fatalf("%s differs from the generator's output; run go run ./dashboards/cmd/gen -out provisioning/dashboards -bundle src/dashboards", path)
				}
			})
		}
	}
}

// panelJSON is the part of a generated panel the structure checks read.
type panelJSON struct {
	ID      int `json:"id"`
	GridPos struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []map[string]any `json:"targets"`
	Field   struct {
		Defaults struct {
			Unit     string `json:"unit"`
			NoValue  string `json:"noValue"`
			Mappings []any  `json:"mappings"`
		} `json:"defaults"`
		Overrides []struct {
			Properties []struct {
				ID    string `json:"id"`
				Value any    `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
	Transformations []any `json:"transformations"`
}

type dashboardJSON struct {
	UID       string      `json:"uid"`
	Title     string      `json:"title"`
	Panels    []panelJSON `json:"panels"`
	Links     []any       `json:"links"`
	Templates struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Multi      bool   `json:"multi"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
			Regex      string `json:"regex"`
			Hide       int    `json:"hide"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
			Current struct {
				Value any `json:"value"`
			} `json:"current"`
		} `json:"list"`
	} `json:"templating"`
}

// labelValuesForm is our label-values variable form: label_values(selector, "label").
var labelValuesForm = regexp.MustCompile(`^label_values\((.+), "([^"]+)"\)$`)

func decodeAll(t *testing.T) map[string]dashboardJSON {
	t.Helper()
	generated, err := All()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dashboardJSON{}
	for _, g := range generated {
		var d dashboardJSON
		if err := json.Unmarshal(g.JSON, &d); err != nil {
			t.Fatalf("%s: %v", g.File, err)
		}
		out[g.File] = d
	}
	return out
}

func TestDashboardStructure(t *testing.T) {
	wantUID := map[string]string{"performance.json": dashref.Performance, "capacity.json": dashref.Capacity, "reliability.json": dashref.Reliability}
	for file, d := range decodeAll(t) {
		t.Run(file, func(t *testing.T) {
			if d.UID != wantUID[file] {
				t.Errorf("uid %q, want %q", d.UID, wantUID[file])
			}
			ids := map[int]string{}
			for _, p := range d.Panels {
				if p.ID == 0 {
					t.Errorf("panel %q has no explicit id", p.Title)
				}
				if prev, dup := ids[p.ID]; dup {
					t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
				}
				ids[p.ID] = p.Title
				if p.Type == "row" {
					continue
				}
				if strings.TrimSpace(p.Description) == "" {
					t.Errorf("panel %q has no description (reading rule)", p.Title)
				}
				if p.Type == "text" {
					continue
				}
				if p.Datasource == nil || p.Datasource.Type != querymodel.PluginID || p.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q datasource %+v, want %s/${datasource}", p.Title, p.Datasource, querymodel.PluginID)
				}
				if numericPanel(p) && p.Field.Defaults.Unit == "" && !hasOverride(p, "unit") {
					t.Errorf("numeric panel %q has no unit", p.Title)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no target", p.Title)
				}
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					ref, _ := tg["refId"].(string)
					if ref == "" || refs[ref] {
						t.Errorf("panel %q: refId %q missing or repeated", p.Title, ref)
					}
					refs[ref] = true
					ds, _ := tg["datasource"].(map[string]any)
					if ds["type"] != querymodel.PluginID || ds["uid"] != "${datasource}" {
						t.Errorf("panel %q target %s datasource %v", p.Title, ref, ds)
					}
				}
			}
			if len(d.Links) < 3 {
				t.Errorf("want links to the other dashboards and the fleet view, got %d", len(d.Links))
			}
		})
	}
}

// The foundation SDK places a panel after the previous one and wraps only once a row is full,
// so a wide panel after a narrow one would stand past Grafana's 24 columns or over another.
func TestPanelsFitTheGrid(t *testing.T) {
	for file, d := range decodeAll(t) {
		t.Run(file, func(t *testing.T) {
			taken := map[[2]int]string{}
			for _, p := range d.Panels {
				g := p.GridPos
				if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
					t.Errorf("panel %q at x=%d w=%d h=%d: outside the 24-column grid", p.Title, g.X, g.W, g.H)
					continue
				}
				if other := place(taken, p.Title, g.X, g.Y, g.W, g.H); other != "" {
					t.Errorf("panel %q overlaps %q", p.Title, other)
				}
			}
		})
	}
}

// place marks the cells of a panel taken, and names the panel already in one of them.
func place(taken map[[2]int]string, title string, x0, y0, w, h int) string {
	for x := x0; x < x0+w; x++ {
		for y := y0; y < y0+h; y++ {
			if other, ok := taken[[2]int{x, y}]; ok {
				return other
			}
			taken[[2]int{x, y}] = title
		}
	}
	return ""
}

// numericPanel: every panel except tables showing only text draws numbers.
func numericPanel(p panelJSON) bool {
	return p.Type == "timeseries" || p.Type == "stat" || p.Type == "barchart" || p.Type == "bargauge"
}

func hasOverride(p panelJSON, id string) bool {
	for _, o := range p.Field.Overrides {
		for _, pr := range o.Properties {
			if pr.ID == id {
				return true
			}
		}
	}
	return false
}

func TestVariables(t *testing.T) {
	want := []string{dashref.VarDatasource, varRegions, varAccount, dashref.VarEndpoint, dashref.VarIC, dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel, varFilters, dashref.VarPercentile, dashref.VarConsole, dashref.VarAgg}

	for file, d := range decodeAll(t) {
		var names []string
		for _, v := range d.Templates.List {
			names = append(names, v.Name)
			switch v.Type {
			case "datasource":
				if v.Query != querymodel.PluginID {
					t.Errorf("%s: datasource variable of type %v, want %s", file, v.Query, querymodel.PluginID)
				}
			case "adhoc":
				// The filters' keys and values come from the dashboard's data source.
				if v.Datasource.Type != querymodel.PluginID || v.Datasource.UID != "${"+dashref.VarDatasource+"}" {
					t.Errorf("%s: ad-hoc variable %s on data source %+v, want ${%s}", file, v.Name, v.Datasource, dashref.VarDatasource)
				}
			case "query":
				q, region := VariableQuery(v.Query)
				switch v.Name {
				case dashref.VarConsole:
					if q != v.Name+"()" || v.Hide != 2 || region != "" {
						t.Errorf("%s: variable %s query %q hide %d, want the hidden %s()", file, v.Name, q, v.Hide, v.Name)
					}
					continue
				case varRegions:
					// All = every listed region: an allValue would be sent as one region name.
					if q != "regions()" || !v.Multi || !v.IncludeAll || v.AllValue != "" || region != "" || v.Current.Value != "$__all" {
						t.Errorf("%s: region variable %+v, want regions(), multi, All without allValue, selected", file, v)
					}
					continue
				}
				// Every other lookup asks the selected regions, and follows the account filter
				// (except the account list itself, which cannot depend on itself).
				if region != vRegions {
					t.Errorf("%s: variable %s is looked up in region %q, want %s", file, v.Name, region, vRegions)
				}
				if follows := strings.Contains(q, vAccount); follows == (v.Name == varAccount) {
					t.Errorf("%s: variable %s query %q: account filter present = %v", file, v.Name, q, follows)
				}
				// query_result() answers whole samples; a regex must pick the label value.
				queryResult := strings.HasPrefix(q, "query_result(") && strings.HasSuffix(q, ")") && v.Regex != ""
				if labelValuesForm.FindStringSubmatch(q) == nil && !queryResult {
					t.Errorf("%s: variable %s query %q is neither label_values(selector, \"label\") nor query_result(expr) with a regex", file, v.Name, q)
				}
				if !v.Multi || !v.IncludeAll || (v.AllValue != ".*" && v.AllValue != ".+") {
					t.Errorf("%s: variable %s should be multi-value with All = .* or .+", file, v.Name)
				}
			}
		}
		wantHere := want
		switch file {
		case "capacity.json": // the calculator's inputs and the cost tag key; deep links do not carry them
			wantHere = append(append([]string{}, want...), dashref.VarFitGPUs, dashref.VarFitMemGiB, dashref.VarCostTag)
		case "performance.json": // the SLO targets of its SLOs row (slo.go)
			wantHere = append(append([]string{}, want...), varTTFTTarget, varITLTarget, varLatencyObj, varErrorObj)
		}
		if strings.Join(names, ",") != strings.Join(wantHere, ",") {
			t.Errorf("%s: variables %v, want %v", file, names, wantHere)
		}
	}
}

// Every panel showing inference-component data states the empty case instead of "No data".
func TestICPanelsHaveEmptyState(t *testing.T) {
	for file, d := range decodeAll(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				expr, _ := tg["expr"].(string)
				// IC-only: reads per-IC metrics and not the per-instance form that covers
				// single-model endpoints too.
				perInstance := false
				for _, v := range []vendedForms{invocationsV, errors4xxV, errors5xxV, modelErrorsV, modelLatencyV, overheadV} {
					perInstance = perInstance || strings.Contains(expr, v.byInstance+"{")
				}
				if !perInstance && (strings.Contains(expr, "InvocationsForIc") || strings.Contains(expr, "ConcurrentRequestsPerCopy")) {
					if p.Field.Defaults.NoValue != noICs {
						t.Errorf("%s: IC panel %q has noValue %q, want %q", file, p.Title, p.Field.Defaults.NoValue, noICs)
					}
				}
			}
		}
	}
}

func TestDiagnosisTarget(t *testing.T) {
	d := decodeAll(t)["performance.json"]
	first := d.Panels[0]
	if first.Type != "table" || len(first.Targets) != 1 {
		t.Fatalf("first Performance panel is %s with %d targets, want the diagnosis table", first.Type, len(first.Targets))
	}
	tg := first.Targets[0]
	if tg["queryType"] != querymodel.QueryTypeDiagnosis || tg["refId"] != "D" || tg["region"] != vRegions || tg["endpoint"] != vEndpoint || tg["inferenceComponent"] != vIC {
		t.Fatalf("diagnosis target %v", tg)
	}
	if _, hasExpr := tg["expr"]; hasExpr {
		t.Fatal("diagnosis target carries an expr")
	}
	if err := (PluginQuery{querymodel.PluginQuery{QueryType: querymodel.QueryTypeDiagnosis}}).Validate(); err == nil {
		t.Fatal("a diagnosis query without refId validated")
	}
}

// urls collects every "url" string in a decoded JSON value, with whether it is a panel data
// link (panel links need the time range spelled out; dashboard links use keepTime).
func urls(v any, inPanels bool, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "url" {
				out[s] = inPanels
			}
			urls(e, inPanels || k == "panels", out)
		}
	case []any:
		for _, e := range x {
			urls(e, inPanels, out)
		}
	}
}

// Deep links must target our dashboards, carry only defined variables and keep the time range.
func TestLinks(t *testing.T) {
	generated, err := All()
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]bool{dashref.Performance: true, dashref.Capacity: true, dashref.Reliability: true}
	vars := map[string]bool{}
	for _, n := range allVarNames {
		vars[n] = true
	}
	queryParam := regexp.MustCompile(`\$\{([A-Za-z_]+):queryparam\}`)
	setVar := regexp.MustCompile(`var-([A-Za-z_]+)=`)
	fieldLabelRef := regexp.MustCompile(`__field\.labels\.([^}]+)\}`)
	for _, g := range generated {
		var doc any
		if err := json.Unmarshal(g.JSON, &doc); err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		urls(doc, false, found)
		if len(found) < 5 {
			t.Errorf("%s: only %d links", g.File, len(found))
		}
		for u, inPanel := range found {
			if inPanel && externalURL(u) {
				continue
			}
			target := strings.SplitN(strings.TrimPrefix(u, "/d/"), "?", 2)[0]
			if !strings.HasPrefix(u, "/d/") || !uids[target] {
				t.Errorf("%s: link %q does not open one of our dashboards", g.File, u)
			}
			for _, m := range append(queryParam.FindAllStringSubmatch(u, -1), setVar.FindAllStringSubmatch(u, -1)...) {
				if !vars[m[1]] {
					t.Errorf("%s: link %q uses undefined variable %q", g.File, u, m[1])
				}
			}
			if inPanel && !strings.Contains(u, "${__url_time_range}") {
				t.Errorf("%s: data link %q drops the time range", g.File, u)
			}
			// A drill-down from a row (inventory, scope and instance tables) keeps the ad-hoc filters.
			if inPanel && !strings.Contains(u, dashref.FiltersParam) {
				t.Errorf("%s: data link %q drops the ad-hoc filters (%s)", g.File, u, dashref.FiltersParam)
			}
			for _, m := range fieldLabelRef.FindAllStringSubmatch(u, -1) {
				if label(m[1]) != m[1] && !regexp.MustCompile(`^\["[^"]+"\]$`).MatchString(m[1]) {
					t.Errorf("%s: link %q reads label %s without the bracket form", g.File, u, m[1])
				}
			}
		}
	}
}

// The "Fleet (all endpoints)" link is a reset: it clears the filter variables and the ad-hoc
// filters, keeping the rest (data source, region, percentile).
func TestFleetLinkResets(t *testing.T) {
	for file, d := range decodeAll(t) {
		var fleet map[string]any
		for _, l := range d.Links {
			if m, _ := l.(map[string]any); m["title"] == "Fleet (all endpoints)" {
				fleet = m
			}
		}
		if fleet == nil {
			t.Fatalf("%s: no fleet link", file)
		}
		u, _ := fleet["url"].(string)
		if strings.Contains(u, dashref.FiltersParam) || strings.Contains(u, "var-"+varFilters+"=") {
			t.Errorf("%s: the fleet reset %q keeps the ad-hoc filters", file, u)
		}
		for _, v := range []string{dashref.VarEndpoint, dashref.VarIC, dashref.VarAZ, dashref.VarInstance} {
			if !strings.Contains(u, "var-"+v+"=$__all") {
				t.Errorf("%s: the fleet reset %q does not clear %s", file, u, v)
			}
		}
		if !strings.Contains(u, "${"+dashref.VarDatasource+":queryparam}") {
			t.Errorf("%s: the fleet reset %q drops the data source", file, u)
		}
	}
}

// externalURL reports whether a data link leaves Grafana for an AWS console page the backend
// built (a whole URL field of the frame) or one built from the row's region field.
func externalURL(u string) bool {
	switch u {
	case dataField(fConsoleURL), dataField(fAlarmURL), dataField(fEventURL):
		return true
	}
	return strings.HasPrefix(u, "${"+dashref.VarConsole+"}/")
}

// Links that leave Grafana open in a new tab and read only fields the alarms frame has.
func TestExternalLinks(t *testing.T) {
	contract := map[string]bool{fResource: true, "resource_type": true, fEndpoint: true, fIC: true, fInstance: true, "state": true,
		fSeverity: true, fSource: true, "alarm": true, "alarms": true, "reason": true, "metric": true, "threshold": true, "updated": true,
		fAlarmURL: true, fConsoleURL: true, fRegion: true}
	fieldRef := regexp.MustCompile(`\$\{__data\.fields\.([a-z_]+)\}`)
	links := resourceLinks(dashref.Performance)
	external := 0
	for _, l := range links {
		u := l["url"].(string)
		for _, m := range fieldRef.FindAllStringSubmatch(u, -1) {
			if !contract[m[1]] {
				t.Errorf("link %q reads field %q, which the alarms frame does not have", u, m[1])
			}
		}
		if externalURL(u) {
			external++
			if l["targetBlank"] != true {
				t.Errorf("link %q leaves Grafana in the same tab", u)
			}
		}
	}
	if external != 4 {
		t.Errorf("%d external links, want the console, the alarm and two Logs Insights links", external)
	}
}

// The Logs Insights link names the log group in the console's fragment encoding and the
// row's region (parameter) on the partition's console (the aws_console variable, as the
// frontend answers it for the data source's default region), for every partition.
func TestLogsInsightsURL(t *testing.T) {
	for _, c := range []struct{ region, console, endpoint string }{
		{"us-east-1", "https://us-east-1.console.aws.amazon.com", "chat"},
		{"eu-west-1", "https://us-east-1.console.aws.amazon.com", "chat"}, // a row of another region
		{"cn-north-1", "https://cn-north-1.console.amazonaws.cn", "a-b-9"},
		{"us-gov-west-1", "https://us-gov-west-1.console.amazonaws-us-gov.com", "X1"},
	} {
		u := strings.NewReplacer("${"+dashref.VarConsole+"}", c.console, dataField(fRegion), c.region, dataField(fEndpoint), c.endpoint).
			Replace(logsInsightsURL(dataField(fRegion), "/aws/sagemaker/Endpoints/"+dataField(fEndpoint)))
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if "https://"+parsed.Host != c.console || parsed.Path != "/cloudwatch/home" || parsed.Query().Get("region") != c.region {
			t.Errorf("%s: host %q path %q region %q", u, parsed.Host, parsed.Path, parsed.Query().Get("region"))
		}
		group := strings.ReplaceAll(parsed.Fragment, "*2f", "/")
		if !strings.HasPrefix(parsed.Fragment, "logsV2:logs-insights") || !strings.Contains(group, "~'/aws/sagemaker/Endpoints/"+c.endpoint+"))") {
			t.Errorf("%s: fragment does not select log group /aws/sagemaker/Endpoints/%s", u, c.endpoint)
		}
	}
}

// Every Endpoint column opens the endpoint in the console and its logs.
func TestEndpointColumnsLinkTheConsole(t *testing.T) {
	found := 0
	for file, d := range decodeAll(t) {
		for _, p := range d.Panels {
			raw, _ := json.Marshal(p)
			if !strings.Contains(string(raw), `"Endpoint"`) || p.Type != "table" {
				continue
			}
			// From the frame's own console URL (the alarms and inventory frames) or built from the row's region.
			built, _ := json.Marshal("${aws_console}/sagemaker/home?region=" + rowRegion + "#/endpoints/${__value.raw}")
			console := strings.Contains(string(raw), "${__data.fields.console_url}") ||
				strings.Contains(string(raw), strings.Trim(string(built), `"`))
			if !console || !strings.Contains(string(raw), "*2faws*2fsagemaker*2fEndpoints*2f") {
				t.Errorf("%s: table %d %q has an Endpoint column without console and Logs Insights links", file, p.ID, p.Title)
			}
			found++
		}
	}
	if found < 5 {
		t.Errorf("only %d tables with an Endpoint column", found)
	}
}

// Console and Logs Insights links built from variables open the clicked row's region (the
// Region column of a PromQL table, the region field of an alarms or inventory row), and
// drill links from a row open the row's region: with several regions on the dashboard, the
// data source's default region would be the wrong one.
func TestRowLinksUseTheRowsRegion(t *testing.T) {
	rowRegions := map[string]bool{rowRegion: true, dataField(fRegion): true}
	consoles, drills := 0, 0
	for file, d := range decodeAll(t) {
		raw, _ := json.Marshal(d.Panels)
		var panels any
		if err := json.Unmarshal(raw, &panels); err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		urls(panels, true, found)
		for u := range found {
			if strings.HasPrefix(u, "${"+dashref.VarConsole+"}/") {
				consoles++
				region := strings.SplitN(strings.SplitN(u, "region=", 2)[1], "#", 2)[0]
				if !rowRegions[region] {
					t.Errorf("%s: console link %q opens region %q, not the row's", file, u, region)
				}
			}
			// Endpoint and IC drill links from a row (${__value.raw} or a row field) pin its region.
			if strings.Contains(u, "var-endpoint=${__") {
				drills++
				m := regexp.MustCompile(`var-region=([^&]+)&`).FindStringSubmatch(u)
				if m == nil || !rowRegions[m[1]] || strings.Contains(u, "${"+varRegions+":queryparam}") {
					t.Errorf("%s: drill link %q does not open the row's region", file, u)
				}
			}
		}
	}
	if consoles < 6 || drills < 4 {
		t.Errorf("only %d console and %d drill links from rows", consoles, drills)
	}
}

// Every panel a diagnosis finding links to, and every panel pkg/dashref names, exists in the
// generated dashboard it claims (viewPanel of a missing id opens an empty page).
func TestDiagnosisLinksResolve(t *testing.T) {
	files := map[string]string{dashref.Performance: "performance.json", dashref.Capacity: "capacity.json", dashref.Reliability: "reliability.json"}
	decoded := decodeAll(t)
	refs := append(diagnosis.LinkedPanels(), dashref.Linkable()...)
	if len(diagnosis.LinkedPanels()) == 0 {
		t.Fatal("diagnosis links to no panel")
	}
	for _, ref := range refs {
		d, ok := decoded[files[ref.Dashboard]]
		if !ok {
			t.Errorf("link to unknown dashboard %q", ref.Dashboard)
			continue
		}
		found := false
		for _, p := range d.Panels {
			if uint32(p.ID) == ref.ID && p.Type != "row" {
				found = true
			}
		}
		if !found {
			t.Errorf("no panel %d on %s", ref.ID, ref.Dashboard)
		}
	}
}

// refsVar reports whether a target (its expr, or a diagnosis target's fields) uses $name.
func refsVar(target map[string]any, name string) bool {
	raw, _ := json.Marshal(target)
	return regexp.MustCompile(`\$\{?` + name + `\b`).Match(raw)
}

// Every panel × every filter variable: each target of the panel uses the variable, or the
// panel's description says it cannot follow it and why, never both. The account is a label
// filter like the others; the region is a query field no target may lack.
func TestEveryPanelFollowsEveryFilter(t *testing.T) {
	for file, d := range decodeAll(t) {
		for _, p := range d.Panels {
			if p.Type == "row" || len(p.Targets) == 0 {
				continue
			}
			for _, tg := range p.Targets {
				if tg["region"] != vRegions {
					t.Errorf("%s: panel %d %q target %v asks region %q, want %s", file, p.ID, p.Title, tg["refId"], tg["region"], vRegions)
				}
			}
			ignored := IgnoredFilters(p.Description)
			for _, v := range append(slices.Clone(dashref.FilterVars), varAccount) {
				follows := true
				for _, tg := range p.Targets {
					follows = follows && refsVar(tg, v)
				}
				switch {
				case !follows && !ignored[v]:
					t.Errorf("%s: panel %d %q ignores the %s filter without saying why (notFiltered)", file, p.ID, p.Title, varTitles[v])
				case follows && ignored[v]:
					t.Errorf("%s: panel %d %q says it ignores the %s filter but every query uses it", file, p.ID, p.Title, varTitles[v])
				}
			}
		}
	}
}

// A named series says which region answered it: several regions can return otherwise
// identical series (a per-framework line, a fleet total). An AZ name says it too.
func TestLegendsNameTheRegion(t *testing.T) {
	legends := 0
	for file, d := range decodeAll(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				legend, ok := tg["legendFormat"].(string)
				if !ok {
					continue
				}
				legends++
				if !namesRegion(legend) {
					t.Errorf("%s: panel %d %q target %v legend %q does not name the region", file, p.ID, p.Title, tg["refId"], legend)
				}
			}
		}
	}
	if legends < 50 {
		t.Errorf("only %d legends", legends)
	}
}

// Vended metrics are missing altogether while OTel enrichment is off: every panel that reads
// them says so in its empty state instead of showing 0.
func TestVendedPanelsNameEnrichment(t *testing.T) {
	for file, d := range decodeAll(t) {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				expr, _ := tg["expr"].(string)
				if ReadsVended(expr) && !strings.Contains(p.Field.Defaults.NoValue, "vended metrics") {
					t.Errorf("%s: panel %d %q reads vended metrics; its noValue %q does not mention them", file, p.ID, p.Title, p.Field.Defaults.NoValue)
					break
				}
			}
		}
	}
}

// TestGoodNewsPanelsSaySo: panels that list only failures or events are empty when nothing
// went wrong, and say so instead of Grafana's "No data".
func TestGoodNewsPanelsSaySo(t *testing.T) {
	want := map[string]map[int]string{
		"performance.json": {9: "No likely cause found"},
		"capacity.json":    {40: "No XID or ECC errors"},
		"reliability.json": {14: "0", 4: "No ICE in the range", 25: "No ICE in the range", 3: "No inference-component cold starts", 24: "No inference-component cold starts"},
	}
	for file, d := range decodeAll(t) {
		found := 0
		for _, p := range d.Panels {
			w, ok := want[file][p.ID]
			if !ok {
				continue
			}
			found++
			if !strings.HasPrefix(p.Field.Defaults.NoValue, w) {
				t.Errorf("%s: panel %d %q has noValue %q, want it to start %q", file, p.ID, p.Title, p.Field.Defaults.NoValue, w)
			}
		}
		if found != len(want[file]) {
			t.Errorf("%s: %d of the %d good-news panels exist", file, found, len(want[file]))
		}
	}
}
