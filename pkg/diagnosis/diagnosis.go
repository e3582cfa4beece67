// Package diagnosis evaluates the dashboards' reading rules automatically: each rule runs a few
// PromQL queries over a scope (fleet, endpoint, inference component) and a time range and turns
// what it sees into findings, which Run ranks (severity, then score). Rules talk to a Querier,
// so they are tested against a real PromQL engine over synthetic data and run in production
// against CloudWatch through pkg/promclient.
package diagnosis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
)

// Severity orders findings: critical before warning before info.
type Severity int

const (
	Info Severity = iota
	Warning
	Critical
)

func (s Severity) String() string {
	switch s {
	case Critical:
		return "critical"
	case Warning:
		return "warning"
	default:
		return "info"
	}
}

// MarshalJSON writes the name, so JSON output stays readable and stable.
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// Level is the kind of resource a finding points at.
type Level string

const (
	LevelEndpoint     Level = "endpoint"
	LevelIC           Level = "inference-component"
	LevelInstance     Level = "instance"
	LevelAZ           Level = "availability-zone"
	LevelInstanceType Level = "instance-type"
	LevelAccount      Level = "account"
)

// Scope selects what Run looks at; empty fields mean "all" (the fleet).
type Scope struct {
	Endpoint           string `json:"endpoint,omitempty"`
	InferenceComponent string `json:"inferenceComponent,omitempty"`
}

func (s Scope) String() string {
	switch {
	case s.Endpoint == "" && s.InferenceComponent == "":
		return "fleet"
	case s.InferenceComponent == "":
		return "endpoint " + s.Endpoint
	case s.Endpoint == "":
		return "inference component " + s.InferenceComponent
	}
	return "endpoint " + s.Endpoint + ", inference component " + s.InferenceComponent
}

// Target is the resource a finding is about, with the endpoint and IC it belongs to so that
// the panel link can carry them.
type Target struct {
	Level              Level  `json:"level"`
	Name               string `json:"name"`
	Endpoint           string `json:"endpoint,omitempty"`
	InferenceComponent string `json:"inferenceComponent,omitempty"`
	Instance           string `json:"instance,omitempty"`
	AZ                 string `json:"availabilityZone,omitempty"`
}

func (t Target) String() string {
	s := string(t.Level) + " " + t.Name
	if t.Endpoint != "" && t.Endpoint != t.Name && t.Level != LevelEndpoint {
		s += " (" + t.Endpoint + ")"
	}
	return s
}

// Evidence is one number that convinced a rule, with the query that produced it.
type Evidence struct {
	What  string `json:"what"`
	Value string `json:"value"`
	Query string `json:"query"`
}

// Finding is one likely cause.
type Finding struct {
	Rule string `json:"rule"`
	// Region is where the finding was made; empty when the query named no region (the data
	// source's default).
	Region    string     `json:"region,omitempty"`
	Cause     string     `json:"cause"`
	Target    Target     `json:"scope"`
	Severity  Severity   `json:"severity"`
	Score     float64    `json:"score"`
	Summary   string     `json:"summary"`
	Evidence  []Evidence `json:"evidence"`
	Next      string     `json:"next"`
	PanelLink string     `json:"panelLink"`
	// Tags are the resource tags of the finding's IC, else its endpoint (HandleQuery reads
	// them from the enriched vended metrics); nil without.
	Tags map[string]string `json:"tags,omitempty"`
	// began is when the incident window the finding judged began (zero when it judged
	// none); ranking reads it to tell a cause from its consequence.
	began time.Time
	// standing: the finding is a standing condition (idle capacity), not an incident; it
	// ranks below every incident.
	standing bool
	// fromLoad: the saturation the finding reports came from more requests of the usual
	// size (see env.fromLoad), which missing copies explain.
	fromLoad bool
	// rejections: a 4xx spike while requests waited in the engine (foldRejections).
	rejections bool
}

// RuleFailure records a rule that could not be evaluated (a query failed, or the rule
// itself did); the other rules' findings are still returned, and the failure is shown.
type RuleFailure struct {
	Rule string `json:"rule"` // empty: the whole region failed (RunRegions)
	// Region the rule failed in; empty when the query named no region.
	Region string `json:"region,omitempty"`
	Error  string `json:"error"`
	Query  string `json:"query,omitempty"` // the PromQL that failed, when a query did
	// Err is the failure, typed, for the caller's edge (pkg/fault) to explain.
	Err error `json:"-"`
}

// Report is the result of one diagnosis run.
type Report struct {
	Scope Scope `json:"scope"`
	// Regions the run covered, in query order; empty when the query named no region.
	Regions  []string      `json:"regions,omitempty"`
	Start    time.Time     `json:"start"`
	End      time.Time     `json:"end"`
	Findings []Finding     `json:"findings"`
	Failures []RuleFailure `json:"failures,omitempty"`
	// Warnings qualify the findings, for example a result cut at the upstream's series limit.
	Warnings []string `json:"warnings,omitempty"`
	// Requests is the number of upstream queries made (identical queries shared by several
	// rules are sent once).
	Requests int `json:"requests"`
	// Ran is how many rules ran and queried (in each region): those asked for, less the ones
	// that need prices where there are none and those that query only when an AWS read gives
	// them something (the change rule), so Failures ≥ Ran means no rule could query.
	Ran int `json:"-"`
	// answered counts the regions where at least one rule could query.
	answered int
}

// maxRange is the longest range Run accepts: CloudWatch reads at most 7 days including
// range windows and the baselines some rules read before the range.
const maxRange = 6 * 24 * time.Hour

// Run evaluates the rules of cfg over scope and [start, end], concurrently (cfg.Concurrency at
// a time), and returns the ranked findings. A failing rule is reported in Report.Failures and
// does not stop the others; only invalid input is an error.
func Run(ctx context.Context, q Querier, scope Scope, start, end time.Time, cfg Config) (Report, error) {
	if q == nil {
		return Report{}, errors.New("diagnosis: no querier: pass a Querier (for example NewPromClientQuerier)")
	}
	rules, err := prepare(start, end, cfg)
	if err != nil {
		return Report{}, err
	}
	if rules = runnable(rules, false); len(rules) == 0 {
		return Report{}, errors.New("diagnosis: the rules asked for need instance prices, which this run does not have: choose others")
	}
	r, _, err := runRegion(ctx, Region{Querier: q}, rules, scope, start, end, cfg)
	return r, err
}

// prepare checks what every run needs before any query: thresholds, range and rule ids.
func prepare(start, end time.Time, cfg Config) ([]rule, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !end.After(start) {
		return nil, fmt.Errorf("diagnosis: the time range is empty (start %s, end %s): choose an end after the start", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	if end.Sub(start) > maxRange {
		return nil, fmt.Errorf("diagnosis: the time range %s is too long: CloudWatch reads at most 7 days including look-back; diagnose 6 days or less", end.Sub(start))
	}
	return selectRules(cfg.Rules)
}

// runRegion runs the rules through one region's querier and ranks its findings; the env it
// returns (with its memoised querier) lets the cross-region rule reuse the answers.
func runRegion(ctx context.Context, rg Region, rules []rule, scope Scope, start, end time.Time, cfg Config) (Report, *env, error) {
	mq := newMemoQuerier(rg.Querier)
	e := &env{q: mq, prices: rg.Prices, policies: rg.Policies, changes: rg.Changes, region: rg.Name, scope: scope, start: start, end: end, cfg: cfg, warnings: &warnings{seen: map[string]bool{}}}
	e.step, e.window = stepFor(end.Sub(start), cfg)
	if err := e.checkScope(ctx); err != nil {
		return Report{}, e, err // e counts the request that found the scope missing
	}

	// Each rule's findings in its own slot, so no lock; a panic in a rule becomes that rule's
	// failure, so one broken rule neither takes the process down nor hides the others'.
	found := make([][]Finding, len(rules))
	errs := fanout.Each(ctx, cfg.Concurrency, rules, func(ctx context.Context, i int, r rule) (err error) {
		found[i], err = r.run(ctx, e)
		return err
	})
	findings := []Finding{} // JSON: an empty list, not null
	var failures []RuleFailure
	for i, r := range rules {
		if errs[i] != nil {
			failures = append(failures, ruleFailure(r.id, errs[i]))
			continue
		}
		fs := found[i]
		for i := range fs {
			fs[i].Rule = r.id
			fs[i].Score = r.priority + 10*math.Max(0, math.Min(0.999, fs[i].Score))
			if fs[i].PanelLink == "" {
				fs[i].PanelLink = panelLink(r.panel, fs[i].Target, start, end)
			}
		}
		findings = append(findings, capFindings(fs, maxFindingsPerRule)...)
	}
	findings = foldRejections(findings)
	e.overloadFirst(findings)
	Rank(findings)
	sort.Slice(failures, func(i, j int) bool { return failures[i].Rule < failures[j].Rule })
	return Report{Scope: scope, Start: start, End: end, Findings: findings, Failures: failures, Warnings: e.warnings.list, Requests: mq.requests(), Ran: querying(rules)}, e, nil
}

// ruleFailure records a rule's error with the query that failed, when one did.
func ruleFailure(id string, err error) RuleFailure {
	f := RuleFailure{Rule: id, Error: err.Error(), Err: err}
	var qe *QueryError
	if errors.As(err, &qe) {
		f.Query = qe.Query
	}
	return f
}

// Rank orders findings by severity, then score (both descending), then rule, target name and
// region so that equal findings keep a stable order.
func Rank(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.standing != b.standing {
			return b.standing // an incident before any standing condition, whatever its severity
		}
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.Target.Name != b.Target.Name {
			return a.Target.Name < b.Target.Name
		}
		return a.Region < b.Region
	})
}

// capFindings keeps a rule's n most important findings, so one widespread problem does not
// bury the others.
func capFindings(fs []Finding, n int) []Finding {
	if n <= 0 || len(fs) <= n {
		return fs
	}
	Rank(fs)
	return fs[:n]
}

// RuleIDs lists the rules in evaluation order.
func RuleIDs() []string {
	ids := make([]string, len(allRules))
	for i, r := range allRules {
		ids[i] = r.id
	}
	return ids
}

func selectRules(ids []string) ([]rule, error) {
	if len(ids) == 0 {
		return allRules, nil
	}
	var out []rule
	for _, id := range ids {
		found := false
		for _, r := range allRules {
			if r.id == id {
				out = append(out, r)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("diagnosis: unknown rule %q: choose from %s", id, strings.Join(RuleIDs(), ", "))
		}
	}
	return out, nil
}
