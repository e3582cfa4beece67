package health

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/consolelinks"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Frame names of the query types.
const (
	FrameAlarms          = "alarms"
	FrameAlarmHistory    = "alarm_history"
	FrameInventory       = "inventory"
	FrameInventoryEvents = "inventory_events"
)

// link is a data link to the URL held in another field of the same row.
func link(title, field string) *data.FieldConfig {
	return &data.FieldConfig{Links: []data.DataLink{{Title: title, URL: "${__data.fields." + field + "}", TargetBlank: true}}}
}

// AlarmsFrame is the alarms query's frame: one row per state, in the given order, each with
// its own region's links. regional (the query names its regions) adds the account column.
func AlarmsFrame(states []State, regional bool) *data.Frame {
	n := len(states)
	var (
		resource, rtype, endpoint, ic, instance = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		state, source, alarm, reason, metric    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		alarmURL, consoleURL, regions, accounts = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		severity                                = make([]float64, n)
		count                                   = make([]int64, n)
		threshold                               = make([]*float64, n)
		updated                                 = make([]*time.Time, n)
	)
	for i, s := range states {
		resource[i], rtype[i], endpoint[i], ic[i], instance[i] = s.Name(), s.Type, s.Endpoint, s.Component, s.Instance
		state[i], severity[i], source[i], alarm[i], count[i] = s.State, Severity(s.State), s.Source, s.Alarm, int64(s.Alarms)
		reason[i], metric[i], threshold[i], updated[i] = s.Reason, s.Metric, s.Threshold, s.Updated
		alarmURL[i], consoleURL[i], regions[i], accounts[i] = s.AlarmURL, s.ConsoleURL(), s.Region, s.Account
	}
	fr := data.NewFrame(FrameAlarms,
		data.NewField("resource", nil, resource).SetConfig(link("Open in the SageMaker console", "console_url")),
		data.NewField("resource_type", nil, rtype),
		data.NewField("endpoint", nil, endpoint),
		data.NewField("inference_component", nil, ic),
		data.NewField("instance", nil, instance),
		data.NewField("state", nil, state),
		data.NewField("severity", nil, severity),
		data.NewField("source", nil, source),
		data.NewField("alarm", nil, alarm).SetConfig(link("Open the alarm in CloudWatch", "alarm_url")),
		data.NewField("alarms", nil, count),
		data.NewField("reason", nil, reason),
		data.NewField("metric", nil, metric),
		data.NewField("threshold", nil, threshold),
		data.NewField("updated", nil, updated),
		data.NewField("alarm_url", nil, alarmURL),
		data.NewField("console_url", nil, consoleURL),
		data.NewField("region", nil, regions),
	)
	if regional {
		fr.Fields = append(fr.Fields, data.NewField("account", nil, accounts))
	}
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return fr
}

// HistoryInput is what HistoryRows reads, for one region.
type HistoryInput struct {
	Transitions []awsapi.Transition
	Alarms      []awsapi.Alarm // to tie transitions to resources
	Inventory   awsapi.Inventory
	Filter      Filter
	Region      string
}

// HistoryRow is one transition of the alarmHistory frame.
type HistoryRow struct {
	Time                          time.Time
	Title, Text, Alarm, From, To  string
	Endpoint, Component, AlarmURL string
	Region, Account               string
}

// HistoryRows are the transitions of one region's alarms on the filter's resources; a
// transition of one series of a multi-series alarm is tied to that series' resource (its
// account the series' @aws.account, else the alarm's). Metric alarms of other services are
// left out; without a filter, PromQL alarms that name no resource and alarms no longer
// there stay in.
func HistoryRows(in HistoryInput) []HistoryRow {
	x := newIndex(in.Inventory)
	byName := map[string]awsapi.Alarm{}
	for _, a := range in.Alarms {
		byName[a.Name] = a
	}
	var rows []HistoryRow
	for _, tr := range in.Transitions {
		a, known := byName[tr.Alarm]
		t := fromLabels(tr.Contributor).within(alarmTarget(a))
		if known && (foreign(a) || (t.empty() && a.PromQL == "")) {
			continue // another service's alarm, as the alarms query leaves it out
		}
		if t.account == "" {
			// One row per transition: the account when the inventory places it in one,
			// the alarm's own when it places it in none, unknown when in several.
			switch cands := x.candidates(t); len(cands) {
			case 0:
				t.account = AccountOf(a.ARN)
			case 1:
				t.account = cands[0]
			}
		}
		if t.component != "" && t.endpoint == "" {
			t.endpoint = x.endpointOf(t.account, t.component)
		}
		if !in.Filter.Keep(t.endpoint, t.component) {
			continue
		}
		head := tr.Alarm + ": " + tr.To
		if tr.From != "" {
			head = tr.Alarm + ": " + tr.From + " → " + tr.To
		}
		if t.instance != "" {
			head += " (" + t.instance + ")"
		}
		rows = append(rows, HistoryRow{Time: tr.Time.UTC(), Title: head, Text: tr.Summary, Alarm: tr.Alarm, From: tr.From, To: tr.To,
			Endpoint: t.endpoint, Component: t.component, AlarmURL: consolelinks.Alarm(in.Region, tr.Alarm), Region: in.Region, Account: t.account})
	}
	return rows
}

// HistoryFrame is the alarmHistory query's frame: the rows of every region, by time. Each
// row is an annotation (time, title, text, tags). regional (the query names its regions)
// adds region and account to the tags and as columns.
func HistoryFrame(rows []HistoryRow, regional bool) *data.Frame {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b HistoryRow) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Alarm, b.Alarm), cmp.Compare(a.Region, b.Region))
	})
	n := len(rows)
	var (
		times                                                    = make([]time.Time, n)
		title, text, tags, alarm, from, to, ep, ic, au, rg, acct = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	)
	for i, r := range rows {
		tg := []string{r.Alarm, r.To, r.Endpoint, r.Component}
		if regional {
			tg = append(tg, r.Region, r.Account)
		}
		times[i], title[i], text[i], tags[i] = r.Time, r.Title, r.Text, joinNonEmpty(tg)
		alarm[i], from[i], to[i], ep[i], ic[i], au[i], rg[i], acct[i] = r.Alarm, r.From, r.To, r.Endpoint, r.Component, r.AlarmURL, r.Region, r.Account
	}
	fr := data.NewFrame(FrameAlarmHistory,
		data.NewField("time", nil, times),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
		data.NewField("alarm", nil, alarm).SetConfig(link("Open the alarm in CloudWatch", "alarm_url")),
		data.NewField("from", nil, from),
		data.NewField("to", nil, to),
		data.NewField("endpoint", nil, ep),
		data.NewField("inference_component", nil, ic),
		data.NewField("alarm_url", nil, au),
	)
	if regional {
		fr.Fields = append(fr.Fields, data.NewField("region", nil, rg), data.NewField("account", nil, acct))
	}
	return fr
}

// nonNil keeps empty columns typed in the frame's JSON ([] rather than null).
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// joinNonEmpty is the tags cell: the values that are set, comma-separated.
func joinNonEmpty(values []string) string {
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return strings.Join(out, ",")
}

// located is an endpoint with the region and account it is in.
type located struct {
	awsapi.Endpoint
	region, account string
}

// endpointsOf are the endpoints of the inventories (one per region), by name, region and
// account.
func endpointsOf(invs []awsapi.Inventory) []located {
	var eps []located
	for _, inv := range invs {
		for _, ep := range inv.Endpoints {
			eps = append(eps, located{Endpoint: ep, region: inv.Region, account: AccountOf(ep.ARN)})
		}
	}
	slices.SortStableFunc(eps, func(a, b located) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.region, b.region), cmp.Compare(a.account, b.account))
	})
	return eps
}

// InventoryFrame is the inventory query's table over the inventories of the queried regions
// (each knows its Region): one row per production variant of each endpoint (one with an
// empty variant when the endpoint has none yet) and one per inference component, endpoints
// by name (then region and account), each endpoint's variants before its components.
// regional (the query names its regions) adds the account column; a tagged resource, the
// tags column (an IC's own tags: AWS does not copy the endpoint's).
func InventoryFrame(invs []awsapi.Inventory, f Filter, regional bool) *data.Frame {
	var (
		kind, endpoint, variant, ic, status, itype, model, failure, console, regions, accounts, tags []string
		instances, desiredInstances, copies, desiredCopies                                           []int64
		created, modified                                                                            []time.Time
	)
	row := func(ep located, k, v, c, st, it string, inst, dInst, cp, dCp int, m string, cr, mod time.Time, fail, url, account string, tagged map[string]string) {
		tags = append(tags, semconv.TagsText(tagged))
		kind, endpoint, variant, ic, status, itype = append(kind, k), append(endpoint, ep.Name), append(variant, v), append(ic, c), append(status, st), append(itype, it)
		instances, desiredInstances, copies, desiredCopies = append(instances, int64(inst)), append(desiredInstances, int64(dInst)), append(copies, int64(cp)), append(desiredCopies, int64(dCp))
		model, created, modified = append(model, m), append(created, cr.UTC()), append(modified, mod.UTC())
		failure, console, regions, accounts = append(failure, fail), append(console, url), append(regions, ep.region), append(accounts, account)
	}
	for _, ep := range endpointsOf(invs) {
		if f.Keep(ep.Name, "") {
			variants := ep.Variants
			if len(variants) == 0 {
				variants = []awsapi.Variant{{}}
			}
			for _, v := range variants {
				row(ep, "variant", v.Name, "", ep.Status, v.InstanceType, v.CurrentInstances, v.DesiredInstances, 0, 0, "",
					ep.Created, ep.Modified, ep.FailureReason, consolelinks.Endpoint(ep.region, ep.Name), ep.account, ep.Tags)
			}
		}
		for _, c := range sortedComponents(ep.Endpoint) {
			if !f.Keep(ep.Name, c.Name) {
				continue
			}
			// The instance type is the hosting variant's; instances are counted on the variant rows only.
			it := ""
			for _, v := range ep.Variants {
				if v.Name == c.Variant {
					it = v.InstanceType
				}
			}
			row(ep, "inference_component", c.Variant, c.Name, c.Status, it, 0, 0, c.CurrentCopies, c.DesiredCopies, c.Model,
				c.Created, c.Modified, c.FailureReason, consolelinks.InferenceComponent(ep.region, c.Name), componentAccount(c, ep.account), c.Tags)
		}
	}
	fr := data.NewFrame(FrameInventory,
		data.NewField("kind", nil, nonNil(kind)),
		data.NewField("endpoint", nil, nonNil(endpoint)).SetConfig(link("Open in the SageMaker console", "console_url")),
		data.NewField("variant", nil, nonNil(variant)),
		data.NewField("inference_component", nil, nonNil(ic)),
		data.NewField("status", nil, nonNil(status)),
		data.NewField("instance_type", nil, nonNil(itype)),
		data.NewField("instances", nil, nonNil(instances)),
		data.NewField("desired_instances", nil, nonNil(desiredInstances)),
		data.NewField("copies", nil, nonNil(copies)),
		data.NewField("desired_copies", nil, nonNil(desiredCopies)),
		data.NewField("model", nil, nonNil(model)),
		data.NewField("created", nil, nonNil(created)),
		data.NewField("modified", nil, nonNil(modified)),
		data.NewField("failure_reason", nil, nonNil(failure)),
		data.NewField("console_url", nil, nonNil(console)),
		data.NewField("region", nil, nonNil(regions)),
	)
	if regional {
		fr.Fields = append(fr.Fields, data.NewField("account", nil, nonNil(accounts)))
	}
	if slices.ContainsFunc(tags, func(t string) bool { return t != "" }) {
		fr.Fields = append(fr.Fields, data.NewField("tags", nil, tags))
	}
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return fr
}

func sortedComponents(ep awsapi.Endpoint) []awsapi.Component {
	cs := slices.Clone(ep.Components)
	slices.SortStableFunc(cs, func(a, b awsapi.Component) int { return cmp.Compare(a.Name, b.Name) })
	return cs
}

// InventoryEventsFrame is the inventory query's annotations: endpoints and inference
// components of the inventories (one per region) created or last updated within [from, to],
// by time. SageMaker keeps only the creation and the last modification, so earlier updates do
// not appear. regional (the query names its regions) adds region and account to the tags and
// as columns.
func InventoryEventsFrame(invs []awsapi.Inventory, f Filter, from, to time.Time, regional bool) *data.Frame {
	type event struct {
		at                                 time.Time
		title, text, tags, region, account string
	}
	var events []event
	add := func(ep located, account, kind, label, name, status string, created, modified time.Time, text string, tags ...string) {
		tg := strings.Join(append([]string{kind, name, status}, tags...), ",")
		if where := joinNonEmpty([]string{ep.region, account}); regional && where != "" {
			tg += "," + where
		}
		e := event{text: text, tags: tg, region: ep.region, account: account}
		if within(created, from, to) {
			e.at, e.title = created.UTC(), label+" "+name+" created"
			events = append(events, e)
		}
		if modified.After(created) && within(modified, from, to) {
			e.at, e.title = modified.UTC(), label+" "+name+" updated"
			events = append(events, e)
		}
	}
	for _, ep := range endpointsOf(invs) {
		if f.Keep(ep.Name, "") {
			parts := []string{"status " + ep.Status}
			for _, v := range ep.Variants {
				parts = append(parts, fmt.Sprintf("variant %s: %d/%d × %s", v.Name, v.CurrentInstances, v.DesiredInstances, v.InstanceType))
			}
			if ep.FailureReason != "" {
				parts = append(parts, "failure: "+ep.FailureReason)
			}
			add(ep, ep.account, "endpoint", "endpoint", ep.Name, ep.Status, ep.Created, ep.Modified, strings.Join(parts, "; "))
		}
		for _, c := range sortedComponents(ep.Endpoint) {
			if !f.Keep(ep.Name, c.Name) {
				continue
			}
			text := fmt.Sprintf("status %s; %d/%d copies of %s on %s/%s", c.Status, c.CurrentCopies, c.DesiredCopies, cmp.Or(c.Model, "(model unknown)"), ep.Name, c.Variant)
			if c.FailureReason != "" {
				text += "; failure: " + c.FailureReason
			}
			add(ep, componentAccount(c, ep.account), "inference_component", "IC", c.Name, c.Status, c.Created, c.Modified, text, ep.Name)
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
	n := len(events)
	times, title, text, tags, regions, accounts := make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range events {
		times[i], title[i], text[i], tags[i], regions[i], accounts[i] = e.at, e.title, e.text, e.tags, e.region, e.account
	}
	fr := data.NewFrame(FrameInventoryEvents,
		data.NewField("time", nil, times),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
	)
	if regional {
		fr.Fields = append(fr.Fields, data.NewField("region", nil, regions), data.NewField("account", nil, accounts))
	}
	return fr
}

func within(t, from, to time.Time) bool {
	return !t.IsZero() && !t.Before(from) && !t.After(to)
}
