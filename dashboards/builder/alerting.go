package builder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/expr"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
)

// Where the rules live and what they query.
const (
	// AlertFolder and AlertFolderUID are the rules' folder. It is not the dashboards' folder
	// (provisioning/dashboards/dashboards.yaml: "Inferscope", uid inferscope): the rule file
	// names its folder by title only, so a shared title would let whichever provisioner runs
	// first decide the dashboards folder's uid.
	AlertFolder    = "Inferscope alerts"
	AlertFolderUID = "inferscope-alerts"
	// AlertDatasourceUID is the data source the rules query: the uid the demo's provisioning
	// gives the emulator (rig/cmd/emulator). dashboards/cmd/gen -datasource writes them for another one
	// (provisioning/datasources/aws.yaml.example uses inferscope-aws).
	AlertDatasourceUID = "inferscope-emulator"
	// AlertInterval is every group's evaluation interval: the metrics' publish period.
	AlertInterval = time.Minute
	// AlertsFile is the provisioning file's name under provisioning/alerting/.
	AlertsFile = "inferscope-rules.yaml"
	// PluginRulesDir holds the copies of the rules the plugin serves (relative to the
	// repository root), rendered for dashref.DatasourceUIDPlaceholder; pkg/plugin embeds them.
	PluginRulesDir = "pkg/plugin/alertrules"
	// RunbookBase is where each rule's runbook anchor points.
	RunbookBase = "https://github.com/inferscope/sagemaker-datasource/blob/main/docs/alerting.md"
	// exprUID is Grafana's server-side expression "data source".
	exprUID = "__expr__"
)

// RuleFormat is how the rules are rendered: for Grafana's file provisioning or for its
// alerting provisioning HTTP API.
type RuleFormat string

const (
	// FormatFile is the YAML file provisioning/alerting/ holds. Grafana expands environment
	// variables ($NAME, ${NAME}) in most of its fields, so a literal $ there is written $$.
	FormatFile RuleFormat = "file"
	// FormatAPI is JSON {"folder": {uid, title}, "groups": [...]}: each group is the body of
	// PUT /api/v1/provisioning/folder/{folder uid}/rule-groups/{group title}; the API expands
	// nothing.
	FormatAPI RuleFormat = "api"
)

// PluginRulesFile is the name of format's copy in PluginRulesDir.
func PluginRulesFile(format RuleFormat) string {
	if format == FormatAPI {
		return "inferscope-rules.json"
	}
	return AlertsFile
}

// Annotations the HTTP API links a rule to a dashboard panel with; the file format has the
// fields dashboardUid and panelId instead.
const (
	annotationDashboard = "__dashboardUid__"
	annotationPanel     = "__panelId__"
)

// File provisioning format (apiVersion 1): groups → rules; the folder is named by its title.
type alertFile struct {
	APIVersion int          `yaml:"apiVersion"`
	Groups     []alertGroup `yaml:"groups"`
}

type alertGroup struct {
	OrgID    int64      `yaml:"orgId"`
	Name     string     `yaml:"name"`
	Folder   string     `yaml:"folder"`
	Interval string     `yaml:"interval"`
	Rules    []fileRule `yaml:"rules"`
}

type fileRule struct {
	UID          string            `yaml:"uid"`
	Title        string            `yaml:"title"`
	Condition    string            `yaml:"condition"`
	Data         []fileQuery       `yaml:"data"`
	DashboardUID string            `yaml:"dashboardUid"`
	PanelID      int               `yaml:"panelId"`
	NoDataState  string            `yaml:"noDataState"`
	ExecErrState string            `yaml:"execErrState"`
	For          string            `yaml:"for"`
	Annotations  map[string]string `yaml:"annotations"`
	Labels       map[string]string `yaml:"labels"`
	IsPaused     bool              `yaml:"isPaused"`
}

type fileQuery struct {
	RefID             string         `yaml:"refId"`
	RelativeTimeRange fileTimeRange  `yaml:"relativeTimeRange"`
	DatasourceUID     string         `yaml:"datasourceUid"`
	Model             map[string]any `yaml:"model"`
}

type fileTimeRange struct {
	From int64 `yaml:"from"`
	To   int64 `yaml:"to"`
}

// apiRules is the FormatAPI document.
type apiRules struct {
	Folder apiFolder            `json:"folder"`
	Groups []alerting.RuleGroup `json:"groups"`
}

type apiFolder struct {
	UID   string `json:"uid"`
	Title string `json:"title"`
}

// RenderAlertRules renders every rule (reading rules and SLO burn rates) for the data source
// datasourceUID in format; FormatFile's bytes are what provisioning/alerting/ must hold.
func RenderAlertRules(format RuleFormat, datasourceUID string) ([]byte, error) {
	return RenderAlertRulesWith(format, datasourceUID, DefaultTagLabels)
}

// RenderAlertRulesWith is RenderAlertRules copying tags (ParseTagLabels) onto the alerts of
// every rule whose resource can be joined to its tagged series.
func RenderAlertRulesWith(format RuleFormat, datasourceUID string, tags []TagLabel) ([]byte, error) {
	if format != FormatFile && format != FormatAPI {
		return nil, fmt.Errorf("alert rules: unknown format %q; use %q or %q", format, FormatFile, FormatAPI)
	}
	if datasourceUID == "" {
		return nil, fmt.Errorf("alert rules: empty data source uid; pass the uid of the provisioned Inferscope data source, e.g. %s", AlertDatasourceUID)
	}
	groups, err := ruleGroups(datasourceUID, tags)
	if err != nil {
		return nil, err
	}
	if format == FormatAPI {
		out, err := json.MarshalIndent(apiRules{Folder: apiFolder{UID: AlertFolderUID, Title: AlertFolder}, Groups: groups}, "", "  ")
		return append(out, '\n'), err
	}
	return fileRules(groups)
}

// ruleGroups builds the one rule model both formats render: the rules in the API's shape,
// one group per dashboard.
func ruleGroups(datasourceUID string, tags []TagLabel) ([]alerting.RuleGroup, error) {
	specs := append(alertRules(diagnosis.DefaultConfig()), sloAlertRules(defaultSLOs())...)
	byName := map[string]*alerting.RuleGroup{}
	for _, s := range specs {
		s = withTags(s, tags)
		r, err := buildRule(s, datasourceUID)
		if err != nil {
			return nil, fmt.Errorf("alert rule %s: %w", s.uid, err)
		}
		g := byName[s.group]
		if g == nil {
			interval := alerting.Duration(AlertInterval / time.Second)
			g = &alerting.RuleGroup{Title: cog.ToPtr(s.group), FolderUid: cog.ToPtr(AlertFolderUID), Interval: &interval}
			byName[s.group] = g
		}
		g.Rules = append(g.Rules, r)
	}
	var out []alerting.RuleGroup
	for _, name := range []string{groupPerformance, groupCapacity, groupReliability} {
		if g := byName[name]; g != nil {
			out = append(out, *g)
		}
	}
	return out, nil
}

// fileRules writes the groups in the file format.
func fileRules(groups []alerting.RuleGroup) ([]byte, error) {
	f := alertFile{APIVersion: 1}
	for _, g := range groups {
		fg := alertGroup{OrgID: 1, Name: fileText(*g.Title), Folder: fileText(AlertFolder), Interval: fileText(durText(time.Duration(*g.Interval) * time.Second))}
		for _, r := range g.Rules {
			fr, err := toFileRule(r)
			if err != nil {
				return nil, fmt.Errorf("alert rule %s: %w", *r.Uid, err)
			}
			fg.Rules = append(fg.Rules, fr)
		}
		f.Groups = append(f.Groups, fg)
	}
	var buf bytes.Buffer
	buf.WriteString("# Generated by dashboards/cmd/gen from dashboards/builder (alerts.go, slo.go): do not edit.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// buildRule writes the rule with the foundation SDK's alerting builders: A the PromQL query,
// B its reduction to one value per series, C the threshold (the condition).
func buildRule(s alertRule, datasourceUID string) (alerting.Rule, error) {
	ds := common.DataSourceRef{Type: cog.ToPtr(querymodel.PluginID), Uid: cog.ToPtr(datasourceUID)}
	exprDS := common.DataSourceRef{Type: cog.ToPtr(exprUID), Uid: cog.ToPtr(exprUID)}
	query := prometheus.NewDataqueryBuilder().RefId("A").Expr(s.expr).Instant().Datasource(ds)
	reduce := expr.NewExprBuilder().TypeReduce(expr.NewTypeReduceBuilder().RefId("B").Datasource(exprDS).
		Expression("A").Reducer(expr.TypeReduceReducer(s.reducer)).
		Settings(expr.NewExprTypeReduceSettingsBuilder().Mode(expr.ExprTypeReduceSettingsModeDropNN)))
	threshold := expr.NewExprBuilder().TypeThreshold(expr.NewTypeThresholdBuilder().RefId("C").Datasource(exprDS).
		Expression("B").Conditions([]cog.Builder[expr.ExprTypeThresholdConditions]{
		expr.NewExprTypeThresholdConditionsBuilder().Evaluator(expr.NewExprTypeThresholdConditionsEvaluatorBuilder().
			Type(expr.ExprTypeThresholdConditionsEvaluatorType(s.op)).Params([]float64{s.threshold})),
	}))
	window := alerting.Duration(s.window / time.Second)
	annotations := alertAnnotations(s)
	annotations[annotationDashboard] = s.evidence.Dashboard
	annotations[annotationPanel] = strconv.Itoa(int(s.evidence.ID))
	return alerting.NewRuleBuilder(s.title).Uid(s.uid).RuleGroup(s.group).FolderUID(AlertFolderUID).OrgID(1).
		Condition("C").
		WithQuery(alerting.NewQueryBuilder("A").DatasourceUid(datasourceUID).RelativeTimeRange(window, 0).Model(query)).
		WithQuery(alerting.NewQueryBuilder("B").DatasourceUid(exprUID).RelativeTimeRange(window, 0).Model(reduce)).
		WithQuery(alerting.NewQueryBuilder("C").DatasourceUid(exprUID).RelativeTimeRange(window, 0).Model(threshold)).
		// No series means nothing matches the rule's conditions: the healthy case, not an outage.
		NoDataState(alerting.RuleNoDataStateOK).
		ExecErrState(alerting.RuleExecErrStateError).
		For(durText(s.pending)).
		Labels(alertLabels(s)).
		Annotations(annotations).
		IsPaused(false).
		Build()
}

// fileText escapes a value for a field file provisioning expands: $$ is a literal $.
func fileText(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// toFileRule moves a built rule into the file format, escaping the fields Grafana's file
// provisioning expands (uid, title, condition, dashboardUid, the states, for, label values,
// refId, datasourceUid) and leaving those it reads raw (annotations, query models: the
// label_replace "$1" of a query stays as it is).
func toFileRule(r alerting.Rule) (fileRule, error) {
	panel, err := strconv.Atoi(r.Annotations[annotationPanel])
	if err != nil {
		return fileRule{}, fmt.Errorf("panel id: %w", err)
	}
	fr := fileRule{
		UID: fileText(*r.Uid), Title: fileText(r.Title), Condition: fileText(r.Condition),
		DashboardUID: fileText(r.Annotations[annotationDashboard]), PanelID: panel,
		NoDataState: fileText(string(r.NoDataState)), ExecErrState: fileText(string(r.ExecErrState)),
		For: fileText(r.For), Annotations: map[string]string{}, Labels: map[string]string{},
	}
	for k, v := range r.Annotations {
		if k != annotationDashboard && k != annotationPanel {
			fr.Annotations[k] = v
		}
	}
	for k, v := range r.Labels {
		fr.Labels[k] = fileText(v)
	}
	for _, q := range r.Data {
		raw, err := json.Marshal(q.Model)
		if err != nil {
			return fileRule{}, err
		}
		var model map[string]any
		if err := json.Unmarshal(raw, &model); err != nil {
			return fileRule{}, err
		}
		fr.Data = append(fr.Data, fileQuery{
			RefID:             fileText(*q.RefId),
			RelativeTimeRange: fileTimeRange{From: int64(*q.RelativeTimeRange.From), To: int64(*q.RelativeTimeRange.To)},
			DatasourceUID:     fileText(*q.DatasourceUid),
			Model:             model,
		})
	}
	return fr, nil
}

// alertLabels: severity, plus the resource labels templated from the firing series.
func alertLabels(s alertRule) map[string]string {
	out := map[string]string{"severity": s.severity, "source": "inferscope"}
	for _, r := range s.resource {
		out[r.alertLabel] = labelRef(r.seriesLabel)
	}
	for _, t := range s.tags {
		out[t.Label] = tagLabelRef(t)
	}
	return out
}

// labelRef is a Grafana template reading a (possibly dotted) label of the firing series.
func labelRef(name string) string { return "{{ index $labels " + strconv.Quote(name) + " }}" }

// alertAnnotations: summary, runbook and a link to the evidence panel filtered to the resource.
func alertAnnotations(s alertRule) map[string]string {
	return map[string]string{
		"summary":     s.summary,
		"runbook_url": RunbookBase + "#" + s.anchor,
		"evidence":    evidenceLink(s),
		"threshold":   s.op + " " + floatText(s.threshold),
	}
}

// evidenceLink opens the panel alone on the firing resource, over the hours before the alert.
func evidenceLink(s alertRule) string {
	params := []string{"viewPanel=" + strconv.Itoa(int(s.evidence.ID)), "from=now-6h", "to=now"}
	vars := []string{}
	for _, r := range s.resource {
		if r.variable != "" {
			vars = append(vars, "var-"+r.variable+"="+labelRef(r.seriesLabel))
		}
	}
	sort.Strings(vars)
	return "/d/" + s.evidence.Dashboard + "?" + strings.Join(append(params, vars...), "&")
}
