package builder

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// The committed provisioning file, and the copies the plugin serves, must be exactly what the
// generator produces.
func TestCommittedAlertRulesAreGenerated(t *testing.T) {
	committed := []struct {
		path   string
		format RuleFormat
		uid    string
	}{
		{"../../provisioning/alerting/" + AlertsFile, FormatFile, AlertDatasourceUID},
		{"../../" + PluginRulesDir + "/" + PluginRulesFile(FormatFile), FormatFile, dashref.DatasourceUIDPlaceholder},
		{"../../" + PluginRulesDir + "/" + PluginRulesFile(FormatAPI), FormatAPI, dashref.DatasourceUIDPlaceholder},
	}
	for _, c := range committed {
		want, err := RenderAlertRules(c.format, c.uid)
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatalf("%v; run go run ./dashboards/cmd/gen", err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s differs from the generator's output; run go run ./dashboards/cmd/gen", c.path)
		}
	}
}

func TestAlertRulesNeedADataSourceAndAFormat(t *testing.T) {
	if _, err := RenderAlertRules(FormatFile, ""); err == nil || !strings.Contains(err.Error(), "data source uid") {
		t.Fatalf("got %v, want an error naming the data source uid", err)
	}
	if _, err := RenderAlertRules("yaml", "my-ds"); err == nil || !strings.Contains(err.Error(), `"file" or "api"`) {
		t.Fatalf("got %v, want an error naming the formats", err)
	}
	for _, f := range []RuleFormat{FormatFile, FormatAPI} {
		out, err := RenderAlertRules(f, "my-ds")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "my-ds") || strings.Contains(string(out), AlertDatasourceUID) {
			t.Errorf("%s: the data source uid is not the one passed", f)
		}
	}
}

// Thresholds come from diagnosis' configuration: changing a field there changes the rule.
func TestThresholdsFollowDiagnosisConfig(t *testing.T) {
	cases := []struct {
		uid   string
		edit  func(*diagnosis.Config)
		want  float64
		inPQL string // the value also appears in the rule's PromQL when it filters on it
	}{
		{"inferscope-kv-saturation", func(c *diagnosis.Config) { c.KVSaturation = 0.8 }, 0.8, ""},
		{"inferscope-kv-saturation", func(c *diagnosis.Config) { c.WaitingRequests = 7 }, 0.9, ">= 7"},
		{"inferscope-engine-queueing", func(c *diagnosis.Config) { c.TTFTHigh = 3 * time.Second }, 3, ""},
		{"inferscope-engine-queueing", func(c *diagnosis.Config) { c.LatencyNormal = 1.7 }, 2, ">= 1.7"},
		{"inferscope-gpu-memory-growth", func(c *diagnosis.Config) { c.TimeToFullCrit = 12 * time.Hour }, 12, ""},
		{"inferscope-gpu-hot", func(c *diagnosis.Config) { c.GPUTempHot = 80 }, 80, "> 80"},
		{"inferscope-az-no-traffic", func(c *diagnosis.Config) { c.AZMinInvocations = 25 }, 0.1, ">= 25"},
		{"inferscope-vram-drop", func(c *diagnosis.Config) { c.VRAMDropPct = 20 }, 20, ""},
		{"inferscope-vram-drop", func(c *diagnosis.Config) { c.VRAMDropWithin = 3 * time.Minute }, 30, "[3m]"},
		{"inferscope-az-no-traffic", func(c *diagnosis.Config) { c.AZNoTrafficShare = 0.2 }, 0.2, ""},
		{"inferscope-slow-cold-start", func(c *diagnosis.Config) { c.ColdStartSlow = 2 * time.Minute }, 120, ""},
		{"inferscope-5xx-rate", func(c *diagnosis.Config) { c.ErrorRateCrit = 0.02 }, 0.02, ""},
		{"inferscope-5xx-rate", func(c *diagnosis.Config) { c.ErrorMinCount = 25 }, 0.05, ">= 25"},
		{"inferscope-scaling-not-firing", func(c *diagnosis.Config) { c.ScalingRise = 3 }, 3, ""},
		{"inferscope-scaling-not-firing", func(c *diagnosis.Config) { c.ScalingBaseline = 12 * time.Hour }, 2, "[12h]"},
	}
	for _, c := range cases {
		cfg := diagnosis.DefaultConfig()
		c.edit(&cfg)
		r := findRule(t, alertRules(cfg), c.uid)
		if r.threshold != c.want {
			t.Errorf("%s: threshold %v, want %v", c.uid, r.threshold, c.want)
		}
		if c.inPQL != "" && !strings.Contains(r.expr, c.inPQL) {
			t.Errorf("%s: PromQL lacks %q: %s", c.uid, c.inPQL, r.expr)
		}
	}
	// And the defaults are diagnosis' defaults.
	def := diagnosis.DefaultConfig()
	if r := findRule(t, alertRules(def), "inferscope-kv-saturation"); r.threshold != def.KVSaturation {
		t.Errorf("default KV threshold %v, want diagnosis' %v", r.threshold, def.KVSaturation)
	}
}

func findRule(t *testing.T, rules []alertRule, uid string) alertRule {
	t.Helper()
	for _, r := range rules {
		if r.uid == uid {
			return r
		}
	}
	t.Fatalf("no rule %s", uid)
	return alertRule{}
}

// Every rule: a severity, resource labels, a runbook anchor that exists in docs/alerting.md and an evidence link to its panel.
func TestRulesAreDocumentedAndLabelled(t *testing.T) {
	doc, err := os.ReadFile("../../docs/alerting.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := markdownAnchors(string(doc))
	rules := append(alertRules(diagnosis.DefaultConfig()), sloAlertRules(defaultSLOs())...)
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.uid] {
			t.Errorf("uid %s twice", r.uid)
		}
		seen[r.uid] = true
		if r.severity != sevCritical && r.severity != sevWarning {
			t.Errorf("%s: severity %q", r.uid, r.severity)
		}
		if len(r.resource) == 0 {
			t.Errorf("%s: no resource labels", r.uid)
		}
		if !anchors[r.anchor] {
			t.Errorf("%s: runbook anchor #%s is not a heading of docs/alerting.md", r.uid, r.anchor)
		}
		link := evidenceLink(r)
		if !strings.HasPrefix(link, "/d/"+r.evidence.Dashboard+"?viewPanel=") {
			t.Errorf("%s: evidence link %s", r.uid, link)
		}
		for _, res := range r.resource {
			if res.variable != "" && !strings.Contains(link, "var-"+res.variable+"=") {
				t.Errorf("%s: evidence link does not filter by %s: %s", r.uid, res.variable, link)
			}
		}
		if r.pending%time.Minute != 0 || r.pending > 30*time.Minute {
			t.Errorf("%s: pending %s is not whole minutes of one-minute data up to 30m", r.uid, r.pending)
		}
	}
}

var heading = regexp.MustCompile(`(?m)^#{2,4} (.+)$`)

// markdownAnchors lists the heading anchors GitHub generates (lower case, spaces to -, most
// punctuation dropped).
func markdownAnchors(md string) map[string]bool {
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, m := range heading.FindAllStringSubmatch(md, -1) {
		out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")] = true
	}
	return out
}

// The SLO row is on Performance with its variables, and the burn-rate pairs are the
// workbook's: 1 h / 5 m above 14.4 and 6 h / 30 m above 6.
func TestSLORowAndBurnRates(t *testing.T) {
	d, err := Performance().Build()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{varTTFTTarget, varITLTarget, varLatencyObj, varErrorObj} {
		if !vars[v] {
			t.Errorf("variable %s missing", v)
		}
	}
	found := 0
	for _, p := range d.Panels {
		if p.RowPanel != nil && p.RowPanel.Title != nil && *p.RowPanel.Title == "SLOs" {
			found++
		}
	}
	if found != 1 {
		t.Errorf("%d SLOs rows, want 1", found)
	}
	rules := sloAlertRules(defaultSLOs())
	if len(rules) != 6 {
		t.Fatalf("%d SLO rules, want fast and slow for three SLOs", len(rules))
	}
	for _, r := range rules {
		fast := strings.HasSuffix(r.uid, "-fast")
		long, short, rate := "[6h]", "[30m]", 6.0
		if fast {
			long, short, rate = "[1h]", "[5m]", 14.4
		}
		if !strings.Contains(r.expr, long) || !strings.Contains(r.expr, short) || r.threshold != rate || !strings.Contains(r.expr, "> "+floatText(rate)) {
			t.Errorf("%s: want windows %s and %s above %v: %s", r.uid, long, short, rate, r.expr)
		}
	}
}

func TestParseTagLabels(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"team=Team", "team=Team", ""},
		{" team = @aws.tag.Team , env=Cost Center.ü ", "team=Team env=Cost Center.ü", ""},
		{"", "", ""},
		{"team", "", `"team" is not label=TagKey`},
		{"team=", "", `"team=" is not label=TagKey`},
		{"my-team=Team", "", `"my-team" is not a label name`},
		{"__team=Team", "", `"__team" is not a label name`},
		{"severity=Team", "", `label "severity" is already an alert label`},
		{"team=Team,team=Owner", "", `label "team" is already an alert label (or named twice)`},
	} {
		got, err := ParseTagLabels(tc.in)
		var parts []string
		for _, l := range got {
			parts = append(parts, l.Label+"="+l.Key)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) || tc.err == "" && (err != nil || strings.Join(parts, " ") != tc.want) {
			t.Errorf("%q: %v %v, want %q / error %q", tc.in, parts, err, tc.want, tc.err)
		}
	}
}

// TestTagLabelsOnJoinableRules: every rule naming an endpoint or an IC carries each tag label
// and joins its tagged series with a fallback to the series as they were; the others
// (account, instance type) carry none and keep their query.
func TestTagLabelsOnJoinableRules(t *testing.T) {
	src := func(r resourceLabel) string { return tagSources[r].dim }
	tags := []TagLabel{{"team", "Team"}, {"env", `Cost "Center" ü`}}
	specs := append(alertRules(diagnosis.DefaultConfig()), sloAlertRules(defaultSLOs())...)
	joined := 0
	for _, s := range specs {
		got := withTags(s, tags)
		joinable := false
		for _, r := range s.resource {
			_, ok := tagSources[r]
			joinable = joinable || ok
		}
		alertLbls := alertLabels(got)
		if !joinable {
			if got.expr != s.expr || alertLbls["team"] != "" {
				t.Errorf("%s names no endpoint or IC but was joined: %s", s.uid, got.expr)
			}
			continue
		}
		joined++
		if want := `{{ with index $labels "@aws.tag.Cost \"Center\" ü" }}{{ . }}{{ else }}untagged{{ end }}`; alertLbls["env"] != want {
			t.Errorf("%s: env label %q, want %q", s.uid, alertLbls["env"], want)
		}
		var keys []string
		for _, r := range tagOrder {
			if slices.Contains(s.resource, r) {
				keys = append(keys, r.seriesLabel)
			}
		}
		if !strings.HasSuffix(got.expr, ") or on ("+labels(keys...)+") ("+s.expr+")") || !strings.Contains(got.expr, `group_left ("@aws.tag.Team", "@aws.tag.Cost \"Center\" ü")`) {
			t.Errorf("%s: join %s", s.uid, got.expr)
		}
		// Each resource's tags are read from the fresh window first and from the hour only
		// for resources without a fresh sample, so a retag is not outvoted by the old value.
		for _, r := range tagOrder {
			if !slices.Contains(s.resource, r) {
				continue
			}
			topk := "topk by (" + label(src(r)) + ") (1, "
			first := strings.Index(got.expr, topk)
			second := strings.Index(got.expr, " or on ("+label(src(r))+") "+topk)
			firstRange := func(from int) string { return regexp.MustCompile(`\[\w+\]`).FindString(got.expr[from:]) }
			if first < 0 || second < first || firstRange(first) != rangeOf(tagFreshWindow) || firstRange(second) != rangeOf(tagWindow) {
				t.Errorf("%s: %s's tags not read from %s before %s: %s", s.uid, r.alertLabel, rangeOf(tagFreshWindow), rangeOf(tagWindow), got.expr)
			}
			break // the first join (the one the fallback does not narrow) is checked
		}
		// A rule naming an IC and its endpoint joins the IC's own tags first, and only the
		// IC series that carry one, so an untagged IC falls back to its endpoint's.
		icJoin, epJoin := strings.Index(got.expr, "* on ("+label(lIC)+") group_left"), strings.Index(got.expr, "* on ("+label(lEP)+") group_left")
		if slices.Contains(s.resource, resIC) && slices.Contains(s.resource, resEndpoint) {
			required := sel(sc.InvocationsForIC, neq(`@aws.tag.Cost "Center" ü`, ""))
			if icJoin < 0 || epJoin < icJoin || !strings.Contains(got.expr[icJoin:epJoin], required) || strings.Contains(got.expr[epJoin:], `!=""`) {
				t.Errorf("%s: IC tags not joined before the endpoint's, or not only tagged ones: %s", s.uid, got.expr)
			}
		}
		if got.window < tagWindow {
			t.Errorf("%s: window %s shorter than the tags' %s", s.uid, got.window, tagWindow)
		}
	}
	if joined < len(specs)-2 {
		t.Errorf("%d of %d rules joined; only the account and instance-type rules should not be", joined, len(specs))
	}
}
