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

// AlarmsFrame is the alarms query's frame: one row per state, in the given order.
func AlarmsFrame(states []State, region string) *data.Frame {
	n := len(states)
	var (
		resource, rtype, endpoint, ic, instance = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		state, source, alarm, reason, metric    = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		alarmURL, consoleURL, regions           = make([]string, n), make([]string, n), make([]string, n)
		severity                                = make([]float64, n)
		count                                   = make([]int64, n)
		threshold                               = make([]*float64, n)
		updated                                 = make([]*time.Time, n)
	)
	for i, s := range states {
		resource[i], rtype[i], endpoint[i], ic[i], instance[i] = s.Name(), s.Type, s.Endpoint, s.Component, s.Instance
		state[i], severity[i], source[i], alarm[i], count[i] = s.State, Severity(s.State), s.Source, s.Alarm, int64(s.Alarms)
		reason[i], metric[i], threshold[i], updated[i] = s.Reason, s.Metric, s.Threshold, s.Updated
		alarmURL[i], consoleURL[i], regions[i] = s.AlarmURL, s.ConsoleURL(region), region
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
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return fr
}

// HistoryInput is what History reads.
type HistoryInput struct {
	Transitions []awsapi.Transition
	Alarms      []awsapi.Alarm // to tie transitions to resources
	Inventory   awsapi.Inventory
	Filter      Filter
	Region      string
}

// HistoryFrame is the alarmHistory query's frame: the transitions of the alarms on the
// filter's resources, by time; a transition of one series of a multi-series alarm is tied to
// that series' resource. Metric alarms of other services are left out; without a filter,
// PromQL alarms that name no resource and alarms no longer there stay in. Each row is an
// annotation (time, title, text, tags).
func HistoryFrame(in HistoryInput) *data.Frame {
	icEndpoint := componentEndpoints(in.Inventory)
	byName := map[string]awsapi.Alarm{}
	for _, a := range in.Alarms {
		byName[a.Name] = a
	}
	ts := slices.Clone(in.Transitions)
	slices.SortStableFunc(ts, func(a, b awsapi.Transition) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Alarm, b.Alarm))
	})
	var (
		times                                          []time.Time
		title, text, tags, alarm, from, to, ep, ic, au []string
	)
	for _, tr := range ts {
		a, known := byName[tr.Alarm]
		t := fromLabels(tr.Contributor).within(alarmTarget(a))
		if known && (foreign(a) || (t.empty() && a.PromQL == "")) {
			continue // another service's alarm, as the alarms query leaves it out
		}
		if t.component != "" && t.endpoint == "" {
			t.endpoint = icEndpoint[t.component]
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
		var tg []string
		for _, v := range []string{tr.Alarm, tr.To, t.endpoint, t.component} {
			if v != "" {
				tg = append(tg, v)
			}
		}
		times = append(times, tr.Time.UTC())
		title, text, tags = append(title, head), append(text, tr.Summary), append(tags, strings.Join(tg, ","))
		alarm, from, to = append(alarm, tr.Alarm), append(from, tr.From), append(to, tr.To)
		ep, ic, au = append(ep, t.endpoint), append(ic, t.component), append(au, consolelinks.Alarm(in.Region, tr.Alarm))
	}
	return data.NewFrame(FrameAlarmHistory,
		data.NewField("time", nil, nonNil(times)),
		data.NewField("title", nil, nonNil(title)),
		data.NewField("text", nil, nonNil(text)),
		data.NewField("tags", nil, nonNil(tags)),
		data.NewField("alarm", nil, nonNil(alarm)).SetConfig(link("Open the alarm in CloudWatch", "alarm_url")),
		data.NewField("from", nil, nonNil(from)),
		data.NewField("to", nil, nonNil(to)),
		data.NewField("endpoint", nil, nonNil(ep)),
		data.NewField("inference_component", nil, nonNil(ic)),
		data.NewField("alarm_url", nil, nonNil(au)),
	)
}

// nonNil keeps empty columns typed in the frame's JSON ([] rather than null).
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func componentEndpoints(inv awsapi.Inventory) map[string]string {
	m := map[string]string{}
	for _, ep := range inv.Endpoints {
		for _, c := range ep.Components {
			m[c.Name] = cmp.Or(c.Endpoint, ep.Name)
		}
	}
	return m
}

// InventoryFrame is the inventory query's table: one row per production variant of each
// endpoint (one with an empty variant when the endpoint has none yet) and one per inference
// component, endpoints by name, each endpoint's variants before its components.
func InventoryFrame(inv awsapi.Inventory, f Filter, region string) *data.Frame {
	var (
		kind, endpoint, variant, ic, status, itype, model, failure, console, regions []string
		instances, desiredInstances, copies, desiredCopies                           []int64
		created, modified                                                            []time.Time
	)
	row := func(k, ep, v, c, st, it string, inst, dInst, cp, dCp int, m string, cr, mod time.Time, fail, url string) {
		kind, endpoint, variant, ic, status, itype = append(kind, k), append(endpoint, ep), append(variant, v), append(ic, c), append(status, st), append(itype, it)
		instances, desiredInstances, copies, desiredCopies = append(instances, int64(inst)), append(desiredInstances, int64(dInst)), append(copies, int64(cp)), append(desiredCopies, int64(dCp))
		model, created, modified = append(model, m), append(created, cr.UTC()), append(modified, mod.UTC())
		failure, console, regions = append(failure, fail), append(console, url), append(regions, region)
	}
	for _, ep := range sortedEndpoints(inv) {
		if f.Keep(ep.Name, "") {
			variants := ep.Variants
			if len(variants) == 0 {
				variants = []awsapi.Variant{{}}
			}
			for _, v := range variants {
				row("variant", ep.Name, v.Name, "", ep.Status, v.InstanceType, v.CurrentInstances, v.DesiredInstances, 0, 0, "",
					ep.Created, ep.Modified, ep.FailureReason, consolelinks.Endpoint(region, ep.Name))
			}
		}
		for _, c := range sortedComponents(ep) {
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
			row("inference_component", ep.Name, c.Variant, c.Name, c.Status, it, 0, 0, c.CurrentCopies, c.DesiredCopies, c.Model,
				c.Created, c.Modified, c.FailureReason, consolelinks.InferenceComponent(region, c.Name))
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
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return fr
}

func sortedEndpoints(inv awsapi.Inventory) []awsapi.Endpoint {
	eps := slices.Clone(inv.Endpoints)
	slices.SortStableFunc(eps, func(a, b awsapi.Endpoint) int { return cmp.Compare(a.Name, b.Name) })
	return eps
}

func sortedComponents(ep awsapi.Endpoint) []awsapi.Component {
	cs := slices.Clone(ep.Components)
	slices.SortStableFunc(cs, func(a, b awsapi.Component) int { return cmp.Compare(a.Name, b.Name) })
	return cs
}

// InventoryEventsFrame is the inventory query's annotations: endpoints and inference
// components created or last updated within [from, to], by time. SageMaker keeps only the
// creation and the last modification, so earlier updates do not appear.
func InventoryEventsFrame(inv awsapi.Inventory, f Filter, from, to time.Time) *data.Frame {
	type event struct {
		at                time.Time
		title, text, tags string
	}
	var events []event
	add := func(kind, label, name, status string, created, modified time.Time, text string, tags ...string) {
		tg := strings.Join(append([]string{kind, name, status}, tags...), ",")
		if within(created, from, to) {
			events = append(events, event{created.UTC(), label + " " + name + " created", text, tg})
		}
		if modified.After(created) && within(modified, from, to) {
			events = append(events, event{modified.UTC(), label + " " + name + " updated", text, tg})
		}
	}
	for _, ep := range sortedEndpoints(inv) {
		if f.Keep(ep.Name, "") {
			parts := []string{"status " + ep.Status}
			for _, v := range ep.Variants {
				parts = append(parts, fmt.Sprintf("variant %s: %d/%d × %s", v.Name, v.CurrentInstances, v.DesiredInstances, v.InstanceType))
			}
			if ep.FailureReason != "" {
				parts = append(parts, "failure: "+ep.FailureReason)
			}
			add("endpoint", "endpoint", ep.Name, ep.Status, ep.Created, ep.Modified, strings.Join(parts, "; "))
		}
		for _, c := range sortedComponents(ep) {
			if !f.Keep(ep.Name, c.Name) {
				continue
			}
			text := fmt.Sprintf("status %s; %d/%d copies of %s on %s/%s", c.Status, c.CurrentCopies, c.DesiredCopies, cmp.Or(c.Model, "(model unknown)"), ep.Name, c.Variant)
			if c.FailureReason != "" {
				text += "; failure: " + c.FailureReason
			}
			add("inference_component", "IC", c.Name, c.Status, c.Created, c.Modified, text, ep.Name)
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
	times, title, text, tags := make([]time.Time, len(events)), make([]string, len(events)), make([]string, len(events)), make([]string, len(events))
	for i, e := range events {
		times[i], title[i], text[i], tags[i] = e.at, e.title, e.text, e.tags
	}
	return data.NewFrame(FrameInventoryEvents,
		data.NewField("time", nil, times),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
	)
}

func within(t, from, to time.Time) bool {
	return !t.IsZero() && !t.Before(from) && !t.After(to)
}
