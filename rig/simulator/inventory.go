package simulator

import "time"

// Deployment is the control-plane view of one inference component, or of a single-model
// endpoint (IC ""), at the last appended step: what SageMaker's Describe calls report.
type Deployment struct {
	Endpoint, IC string
	Copies       int       // serving copies (instances for a single-model endpoint)
	LastScaled   time.Time // the last autoscaling action; zero when none happened
}

// Deployments reports every IC and single-model endpoint in fleet order. Before the first
// step the copies are the fleet's initial ones.
func (s *Simulator) Deployments() []Deployment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Deployment
	for _, ep := range s.eps {
		for _, g := range ep.groups {
			d := Deployment{Endpoint: ep.cfg.Name, IC: g.name, Copies: g.active}
			if g.lastScale > 0 && s.started {
				d.LastScaled = time.UnixMilli(g.lastScale).UTC()
			}
			out = append(out, d)
		}
	}
	return out
}

// Origin is the start of the first backfill (zero before it).
func (s *Simulator) Origin() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return time.Time{}
	}
	return time.UnixMilli(s.origin).UTC()
}
