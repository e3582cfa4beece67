package changes

import (
	"cmp"
	"slices"
	"time"
)

// DefaultWindow is how long before a signal's start a change is still a probable cause:
// a deployment's effect shows within minutes (a rollout, the first requests on the new
// copies), so a change older than this is history, not cause.
const DefaultWindow = 30 * time.Minute

// Signal is a finding's incident as attribution reads it: the resource whose signal
// departed and when it began.
type Signal struct {
	Kind     string // KindComponent, KindEndpoint, or another level (instance, AZ, ...)
	Resource string
	// Endpoint is the endpoint the resource belongs to ("" when it belongs to none, such
	// as an instance type or an account).
	Endpoint string
	// Account and Region, when set on both the signal and a change, must match.
	Account, Region string
	Start           time.Time
}

// Scope is how a change relates to the signal's resource; a lower scope is closer.
type Scope int

const (
	ScopeResource Scope = iota // the resource itself (an IC's update, its scaling policy)
	ScopeEndpoint              // the endpoint of the resource, or an IC of the endpoint signalling
	ScopeSibling               // another IC on the endpoint of a resource below it (an instance)
)

// Cause is a change that probably caused a signal.
type Cause struct {
	Change Change
	Scope  Scope
	Lead   time.Duration // from the change to the signal's start (≥ 0)
}

// Attribute ranks the changes that probably caused sig: those to its resource or its
// endpoint made at most window before the signal began, closest scope first, then the
// latest. A change after the signal began, one older than window, one to an unrelated
// resource and one to an endpoint config (which acts only through an UpdateEndpoint) are
// never returned. A signal without a start has no cause.
func Attribute(sig Signal, changes []Change, window time.Duration) []Cause {
	if sig.Start.IsZero() || sig.Resource == "" {
		return nil
	}
	var out []Cause
	for _, c := range changes {
		lead := sig.Start.Sub(c.Time)
		if lead < 0 || lead > window || !sameAccount(sig, c) {
			continue
		}
		if scope, ok := relate(sig, c); ok {
			out = append(out, Cause{Change: c, Scope: scope, Lead: lead})
		}
	}
	slices.SortStableFunc(out, func(a, b Cause) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Lead, b.Lead), cmp.Compare(a.Change.EventID, b.Change.EventID))
	})
	return out
}

func sameAccount(sig Signal, c Change) bool {
	return (sig.Account == "" || c.Account == "" || sig.Account == c.Account) &&
		(sig.Region == "" || c.Region == "" || sig.Region == c.Region)
}

// relate is the scope of c for sig, if any.
func relate(sig Signal, c Change) (Scope, bool) {
	switch {
	case c.Kind == KindEndpointConfig:
		return 0, false
	case c.Kind == sig.Kind && c.Resource == sig.Resource:
		return ScopeResource, true
	case sig.Endpoint == "":
		return 0, false
	case c.Kind == KindEndpoint && c.Resource == sig.Endpoint:
		return ScopeEndpoint, true
	case c.Kind == KindComponent && c.Endpoint == sig.Endpoint && sig.Kind == KindEndpoint:
		return ScopeEndpoint, true
	case c.Kind == KindComponent && c.Endpoint == sig.Endpoint && sig.Kind != KindComponent:
		return ScopeSibling, true
	}
	return 0, false
}

// FillEndpoints sets the endpoint of IC changes whose event did not name it (an
// UpdateInferenceComponent names the IC only) from endpointOf, such as the inventory's
// IC → endpoint map, so an endpoint's signal can be tied to a change of its ICs.
func FillEndpoints(changes []Change, endpointOf map[string]string) {
	for i := range changes {
		if c := &changes[i]; c.Kind == KindComponent && c.Endpoint == "" {
			c.Endpoint = endpointOf[c.Resource]
		}
	}
}
