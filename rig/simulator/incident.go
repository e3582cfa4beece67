package simulator

import "time"

// Incident is where the scenario played: the resource a diagnosis should point at. Level is
// "" for healthy, else "inference-component", "endpoint", "instance", "availability-zone",
// "instance-type" or "account"; Name is that resource; Endpoint is the endpoint it belongs to.
type Incident struct {
	Scenario string
	Level    string
	Name     string
	Endpoint string
	// Start is when the incident's first signal entered the series: the crash, the first
	// slow cold start, the first failed launch, the start of the history (a leak, enrichment
	// off), else the scenario's onset. Zero before the first backfill, and for healthy and
	// for a cold start that has not happened yet.
	Start time.Time
}

// Incident reports the target the scenario picked (targets are chosen by rule, so a test
// with a generated fleet reads them here instead of repeating the rules).
func (s *Simulator) Incident() Incident {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.target()
	if !s.started || in.Level == "" {
		return in
	}
	at := s.incidentFrom
	switch {
	case s.crash != nil:
		at = s.anchor - (s.lead * 2 / 3).Milliseconds()
	case s.leaking(), s.noVended:
		at = s.origin
	}
	for _, ep := range s.eps {
		for _, g := range ep.groups {
			if g.slowDownload {
				at = g.firstSlowStart
			}
		}
	}
	if at != 0 {
		in.Start = time.UnixMilli(at).UTC()
	}
	return in
}

func (s *Simulator) leaking() bool {
	for _, i := range s.insts {
		if i.leak {
			return true
		}
	}
	return false
}

func (s *Simulator) target() Incident {
	in := Incident{Scenario: s.scenario}
	group := func(g *groupSim) Incident {
		return Incident{Scenario: s.scenario, Level: "inference-component", Name: g.name, Endpoint: g.ep.cfg.Name}
	}
	instance := func(i *instSim) Incident {
		return Incident{Scenario: s.scenario, Level: "instance", Name: i.id, Endpoint: i.ep.cfg.Name}
	}
	switch {
	case s.crash != nil:
		return instance(s.crash.inst)
	case s.ice != nil:
		return Incident{Scenario: s.scenario, Level: "instance-type", Name: s.ice.typ, Endpoint: s.ice.ep.cfg.Name}
	case s.noVended && len(s.eps) > 0:
		return Incident{Scenario: s.scenario, Level: "account", Name: s.eps[0].acct[1]}
	}
	for _, ep := range s.eps {
		if ep.zeroAZ != "" {
			return Incident{Scenario: s.scenario, Level: "availability-zone", Name: ep.zeroAZ, Endpoint: ep.cfg.Name}
		}
		if ep.failShare > 0 {
			return Incident{Scenario: s.scenario, Level: "endpoint", Name: ep.cfg.Name, Endpoint: ep.cfg.Name}
		}
		for _, g := range ep.groups {
			if g.noScaling || g.slowDownload || g.itlFactor > 1 {
				return group(g)
			}
		}
	}
	for _, i := range s.insts {
		if i.leak {
			return instance(i)
		}
		for _, g := range i.gpus {
			if g.degraded {
				return instance(i)
			}
		}
	}
	return in
}
