package simulator

// Incident is where the scenario played: the resource a diagnosis should point at. Level is
// "" for healthy, else "inference-component", "instance", "availability-zone" or
// "instance-type"; Name is that resource; Endpoint is the endpoint it belongs to.
type Incident struct {
	Scenario string
	Level    string
	Name     string
	Endpoint string
}

// Incident reports the target the scenario picked (targets are chosen by rule, so a test
// with a generated fleet reads them here instead of repeating the rules).
func (s *Simulator) Incident() Incident {
	in := Incident{Scenario: s.scenario}
	group := func(g *groupSim) Incident {
		return Incident{Scenario: s.scenario, Level: "inference-component", Name: g.name, Endpoint: g.ep.cfg.Name}
	}
	switch {
	case s.crash != nil:
		return Incident{Scenario: s.scenario, Level: "instance", Name: s.crash.inst.id, Endpoint: s.crash.inst.ep.cfg.Name}
	case s.ice != nil:
		return Incident{Scenario: s.scenario, Level: "instance-type", Name: s.ice.typ, Endpoint: s.ice.ep.cfg.Name}
	}
	for _, ep := range s.eps {
		if ep.zeroAZ != "" {
			return Incident{Scenario: s.scenario, Level: "availability-zone", Name: ep.zeroAZ, Endpoint: ep.cfg.Name}
		}
		for _, g := range ep.groups {
			if g.noScaling || g.slowDownload {
				return group(g)
			}
		}
	}
	for _, i := range s.insts {
		degraded := false
		for _, g := range i.gpus {
			degraded = degraded || g.degraded
		}
		if i.leak || degraded {
			return Incident{Scenario: s.scenario, Level: "instance", Name: i.id, Endpoint: i.ep.cfg.Name}
		}
	}
	return in
}
