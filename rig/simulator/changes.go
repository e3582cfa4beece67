package simulator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Change is one management call in the fleet's history as CloudTrail records it: the
// emulator's LookupEvents serves these, and its inventory shows their effect.
type Change struct {
	ID       string // CloudTrail's eventID: stable for a fleet, scenario and seed
	Time     time.Time
	Source   string // event source, e.g. sagemaker.amazonaws.com
	Event    string // event name, e.g. UpdateInferenceComponent
	Who      string // the caller's ARN
	Account  string
	Region   string
	Endpoint string // the endpoint changed, or the one of the IC changed
	IC       string // the IC changed; "" for an endpoint's change
	// Request is the requestParameters in CloudTrail's camelCase.
	Request map[string]any
	// Image and Config are the IC's image and the endpoint's config from this change on
	// ("" when it sets neither).
	Image, Config string
}

// BaseImageVersion is the version of every IC's image until a change deploys another.
const BaseImageVersion = "0.6.3"

// Image is the container image URI of an engine's version in a region.
func Image(region, engine, version string) string {
	return fmt.Sprintf("763104351884.dkr.ecr.%s.amazonaws.com/%s-inference:%s", region, strings.ToLower(engine), version)
}

// plannedChange is a change at an offset from the incident's onset (the history is placed
// by the first backfill, so times are known only then).
type plannedChange struct {
	Change
	at time.Duration // from incidentFrom
}

// The callers of the scenarios' changes.
const (
	deployerRole = "deployer"
	changeLead   = 2 * time.Minute // a deployment's call precedes its first effect by this
)

// Changes are the changes made up to the last appended step, oldest first (none before
// the first backfill).
func (s *Simulator) Changes() []Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	var out []Change
	for _, p := range s.changes {
		c := p.Change
		c.Time = time.UnixMilli(s.incidentFrom + p.at.Milliseconds()).UTC()
		if c.Time.UnixMilli() <= s.last {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Change) int { return a.Time.Compare(b.Time) })
	return out
}

// plan adds a change by the deployer role in the endpoint's account, at an offset from
// the incident's onset.
func (s *Simulator) plan(ep *endpointSim, ic string, at time.Duration, event string, request map[string]any) *plannedChange {
	acct := s.f.AccountOf(ep.cfg)
	p := &plannedChange{at: at, Change: Change{
		ID:     fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", s.hash(ep.cfg.Name, ic, event, at.String())&0xffffffff, len(s.changes), s.hash(event)&0xfff, s.hash(ic)&0xfff, s.hash(ep.cfg.Name, at.String())&0xffffffffffff),
		Source: "sagemaker.amazonaws.com", Event: event, Account: acct, Region: s.f.Region, Endpoint: ep.cfg.Name, IC: ic, Request: request,
		Who: fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/ci-%s", acct, deployerRole, strings.ToLower(event)),
	}}
	s.changes = append(s.changes, p)
	return p
}

// deployImage plans two image updates of g: the image it ran before, an hour before the
// onset (so the history tells what the deployment changed), and the new one changeLead
// before at.
func (s *Simulator) deployImage(g *groupSim, at time.Duration) {
	image := func(v string) string { return Image(s.f.Region, g.engine, v) }
	for _, d := range []struct {
		at time.Duration
		v  string
	}{{at - time.Hour, BaseImageVersion}, {at - changeLead, "0.6.4"}} {
		p := s.plan(g.ep, g.name, d.at, "UpdateInferenceComponent", map[string]any{
			"inferenceComponentName": g.name,
			"specification": map[string]any{
				"modelName": g.ic.Model,
				"container": map[string]any{"image": image(d.v), "environment": map[string]any{"HF_TOKEN": "hf_simulatedSecretNeverShown"}}, // #nosec G101 -- a fake secret planted so tests show the parser never passes it on
			},
		})
		p.Image = image(d.v)
	}
}

// applyBadDeploy: a new image on one vLLM IC decodes slower from the onset; the call
// precedes it by changeLead. TTFT and ITL rise on that IC only.
func applyBadDeploy(s *Simulator) error {
	g := s.icGroup(fleet.EngineVLLM)
	if g == nil {
		if g = s.icGroup(""); g == nil {
			return errNoIC
		}
	}
	g.itlFactor = 2.5
	s.deployImage(g, 0)
	return nil
}

// applyBadConfig: an endpoint moves to a new endpoint config whose variant fails a share of
// its requests from the onset (5XX and model errors); the UpdateEndpoint precedes it.
func applyBadConfig(s *Simulator) error {
	ep := s.eps[0]
	for _, e := range s.eps {
		if !e.cfg.IsIC() {
			ep = e // a single-model endpoint: the config carries the model
			break
		}
	}
	ep.failShare = 0.3
	config := ep.cfg.Name + "-config-v2"
	s.plan(ep, "", -changeLead-3*time.Minute, "CreateEndpointConfig", map[string]any{
		"endpointConfigName": config,
		"productionVariants": []any{map[string]any{"variantName": ep.cfg.Variant, "instanceType": ep.cfg.Instances[0].Type, "initialInstanceCount": ep.cfg.InstanceCount()}},
	})
	p := s.plan(ep, "", -changeLead, "UpdateEndpoint", map[string]any{"endpointName": ep.cfg.Name, "endpointConfigName": config})
	p.Config = config
	return nil
}

// applyBenignDeploy: the engine-queueing incident on one IC, while a deployment with no
// effect goes to an IC of another endpoint (or another endpoint's config when no other
// endpoint has ICs) five minutes before it starts.
func applyBenignDeploy(s *Simulator) error {
	if err := applyEngineQueueing(s); err != nil {
		return err
	}
	hit := s.target()
	for _, ep := range s.eps {
		if ep.cfg.Name == hit.Endpoint {
			continue
		}
		for _, g := range ep.groups {
			if g.ic != nil {
				s.deployImage(g, -3*time.Minute)
				return nil
			}
		}
	}
	for _, ep := range s.eps {
		if ep.cfg.Name != hit.Endpoint {
			p := s.plan(ep, "", -5*time.Minute, "UpdateEndpoint", map[string]any{"endpointName": ep.cfg.Name, "endpointConfigName": ep.cfg.Name + "-config-v2"})
			p.Config = ep.cfg.Name + "-config-v2"
			return nil
		}
	}
	return fmt.Errorf("the fleet has one endpoint only; benign-deploy needs a second to deploy to while %s has its incident", hit.Endpoint)
}
