// Package health is the plugin's health model, pure: it joins the SageMaker inventory with
// CloudWatch alarms (and the contributors of multi-series PromQL alarms) into one state per
// resource, worst first, falls back to the engine thresholds where a resource has no alarm,
// and builds the frames of the alarms, alarmHistory and inventory queries
// (docs/alarms.md; the field names and order are a contract with the dashboards).
package health

import (
	"cmp"
	"slices"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/consolelinks"
)

// Resource types of the alarms frame.
const (
	TypeEndpoint  = "endpoint"
	TypeComponent = "inference_component"
	TypeInstance  = "instance"
)

// StateNoAlarm is the state of a resource without any alarm (and no threshold reading).
const StateNoAlarm = "NO_ALARM"

// Where a resource's state comes from.
const (
	SourceAlarm     = "alarm"
	SourceThreshold = "threshold"
	SourceNone      = "none"
)

// Severity orders states: 3 ALARM, 2 INSUFFICIENT_DATA, 1 OK, 0 no alarm.
func Severity(state string) float64 {
	switch state {
	case awsapi.StateAlarm:
		return 3
	case awsapi.StateInsufficientData:
		return 2
	case awsapi.StateOK:
		return 1
	}
	return 0
}

// Filter keeps resources by endpoint and inference component name; an empty list keeps any.
// With a component filter, only resources of those components remain (not their endpoints).
type Filter struct{ Endpoints, Components []string }

// Keep reports whether a resource of that endpoint and component passes.
func (f Filter) Keep(endpoint, component string) bool {
	return (len(f.Endpoints) == 0 || slices.Contains(f.Endpoints, endpoint)) &&
		(len(f.Components) == 0 || slices.Contains(f.Components, component))
}

// Resource is one tile: an endpoint, an inference component, or an instance an alarm names,
// in one region and account. The same names in two regions or accounts are two resources.
type Resource struct {
	Type                          string
	Endpoint, Component, Instance string
	Region                        string
	Account                       string // "" when neither an ARN nor a label says
}

// Name is the resource's display name.
func (r Resource) Name() string {
	switch r.Type {
	case TypeInstance:
		return r.Instance
	case TypeComponent:
		return r.Component
	}
	return r.Endpoint
}

// State is one row of the alarms frame: the resource and its worst alarm.
type State struct {
	Resource
	State     string
	Source    string
	Alarm     string // the worst alarm's name, or the threshold rule's label
	Alarms    int    // alarms on the resource
	Reason    string
	Metric    string // metric name or PromQL
	Threshold *float64
	Updated   *time.Time
	AlarmURL  string
}

// Input is what Join reads.
type Input struct {
	Inventory awsapi.Inventory
	Alarms    []awsapi.Alarm
	// Contributors of the alarms NeedsContributors names, by alarm name.
	Contributors map[string][]awsapi.Contributor
	Filter       Filter
	// Region is where the alarms and the inventory were read: Join sees one region at a
	// time, so an alarm is never tied to another region's resource.
	Region string
}

// Join gives every resource of the inventory, and every resource an alarm names, one state:
// the worst of its alarms, NO_ALARM without any. Alarms that name no resource (other
// services', multi-series alarms not in ALARM) are returned by name in unmapped.
// A resource is its type, name and account: the inventory's account is its ARNs'; a metric
// alarm's is its own (its ARN); a PromQL alarm's is the @aws.account its query or its
// series name, else every account of the region with a resource of that name (see place).
func Join(in Input) (states []State, unmapped []string) {
	x := newIndex(in.Inventory)
	byKey := map[Resource]*State{}
	var order []*State
	resource := func(t target) *State {
		if t.component != "" && t.endpoint == "" {
			t.endpoint = x.endpointOf(t.account, t.component)
		}
		r := Resource{Type: TypeEndpoint, Endpoint: t.endpoint}
		switch {
		case t.instance != "":
			r = Resource{Type: TypeInstance, Instance: t.instance}
		case t.component != "":
			r = Resource{Type: TypeComponent, Component: t.component}
		}
		r.Region, r.Account = in.Region, t.account
		s := byKey[r]
		if s == nil {
			s = &State{Resource: r, State: StateNoAlarm, Source: SourceNone}
			byKey[r] = s
			order = append(order, s)
		}
		// Keys carry only the name; what else is known about the resource fills in.
		s.Endpoint = cmp.Or(s.Endpoint, t.endpoint)
		s.Component = cmp.Or(s.Component, t.component)
		return s
	}
	for _, ep := range in.Inventory.Endpoints {
		account := AccountOf(ep.ARN)
		resource(target{endpoint: ep.Name, account: account})
		for _, c := range ep.Components {
			resource(target{endpoint: cmp.Or(c.Endpoint, ep.Name), component: c.Name, account: componentAccount(c, account)})
		}
	}
	for _, a := range in.Alarms {
		hs := hits(a, in.Contributors[a.Name])
		if len(hs) == 0 {
			unmapped = append(unmapped, a.Name)
			continue
		}
		for _, h := range hs {
			for _, t := range x.place(h.target, AccountOf(a.ARN)) {
				apply(resource(t), a, h)
			}
		}
	}
	for _, s := range order {
		if in.Filter.Keep(s.Endpoint, s.Component) {
			states = append(states, *s)
		}
	}
	Sort(states)
	return states, unmapped
}

// apply counts an alarm on a resource and makes it the one shown when it is worse than
// the one shown so far (on a tie, the later state change).
func apply(s *State, a awsapi.Alarm, h hit) {
	s.Alarms++
	worse := Severity(h.state) > Severity(s.State) || s.Source != SourceAlarm
	if !worse && Severity(h.state) == Severity(s.State) {
		var shown time.Time
		if s.Updated != nil {
			shown = *s.Updated
		}
		worse = a.Updated.After(shown) || (a.Updated.Equal(shown) && a.Name < s.Alarm)
	}
	if !worse {
		return
	}
	s.State, s.Source, s.Alarm, s.Reason = h.state, SourceAlarm, a.Name, h.reason
	s.Metric = cmp.Or(a.PromQL, a.Metric)
	s.Threshold = a.Threshold
	s.Updated = nil
	if !a.Updated.IsZero() {
		u := a.Updated.UTC()
		s.Updated = &u
	}
	s.AlarmURL = consolelinks.Alarm(s.Region, a.Name)
}

var typeOrder = map[string]int{TypeEndpoint: 0, TypeComponent: 1, TypeInstance: 2}

// Sort puts the worst first, then by endpoint, type (endpoint, component, instance), name,
// region and account, so the same names in several regions sit together.
func Sort(states []State) {
	slices.SortStableFunc(states, func(a, b State) int {
		return cmp.Or(
			-cmp.Compare(Severity(a.State), Severity(b.State)),
			cmp.Compare(a.Endpoint, b.Endpoint),
			cmp.Compare(typeOrder[a.Type], typeOrder[b.Type]),
			cmp.Compare(a.Name(), b.Name()),
			cmp.Compare(a.Region, b.Region),
			cmp.Compare(a.Account, b.Account),
		)
	})
}

// ConsoleURL is the SageMaker console page of the resource in its own region: an instance's
// is its IC's, else its endpoint's (instances of SageMaker endpoints have no console page of
// their own).
func (r Resource) ConsoleURL() string {
	if r.Type == TypeEndpoint {
		return consolelinks.Endpoint(r.Region, r.Endpoint)
	}
	if r.Component != "" {
		return consolelinks.InferenceComponent(r.Region, r.Component)
	}
	return consolelinks.Endpoint(r.Region, r.Endpoint)
}
