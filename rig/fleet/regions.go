package fleet

import (
	"slices"
	"strings"
)

// Accounts of the multi-account fleets (TwoRegions): the monitoring account and a source
// account linked to it through CloudWatch cross-account observability.
const (
	MonitoringAccount = "111111111111"
	SourceAccount     = "222222222222"
)

// InRegion returns a copy of f in region: every zone keeps its letter (us-east-1a becomes
// us-west-2a) and, when suffix is set, every endpoint and inference component name gets
// "-"+suffix, so the copy's series differ from f's by name as well as by @aws.region.
// Alarms are copied as written: for_each alarms follow the new names, literal names do not.
func (f *Fleet) InRegion(region, suffix string) *Fleet {
	c := *f
	c.Region = region
	c.Models = slices.Clone(f.Models)
	c.Alarms = slices.Clone(f.Alarms) // keeps nil (DefaultAlarms) apart from empty (none)
	rename := func(name string) string {
		if suffix == "" {
			return name
		}
		return name + "-" + suffix
	}
	c.Endpoints = make([]Endpoint, len(f.Endpoints))
	for i, e := range f.Endpoints {
		e.Name = rename(e.Name)
		e.Instances = slices.Clone(e.Instances)
		for j := range e.Instances {
			e.Instances[j].AZ = region + strings.TrimPrefix(e.Instances[j].AZ, f.Region)
		}
		e.InferenceComponents = slices.Clone(e.InferenceComponents)
		for j := range e.InferenceComponents {
			e.InferenceComponents[j].Name = rename(e.InferenceComponents[j].Name)
		}
		c.Endpoints[i] = e
	}
	return &c
}

// TwoRegions is the default fleet twice, as a monitoring account sees it: in us-east-1 with
// its names, and in us-west-2 with names ending in "-west"; in each region the first endpoint
// (the IC endpoint chat-ic) is in one account and the others in the other, the accounts
// swapped between the regions, so every region holds both accounts and every account both
// regions. Stacks give each region its own seed, so instance ids differ too.
func TwoRegions() []*Fleet {
	east := Default()
	west := east.InRegion("us-west-2", "west")
	for _, x := range []struct {
		f           *Fleet
		first, rest string
	}{{east, MonitoringAccount, SourceAccount}, {west, SourceAccount, MonitoringAccount}} {
		x.f.Account = MonitoringAccount
		for i := range x.f.Endpoints {
			x.f.Endpoints[i].Account = x.rest
		}
		x.f.Endpoints[0].Account = x.first
	}
	return []*Fleet{east, west}
}

// Validate checks a fleet built in code with the file's rules; errors carry no line.
func (f *Fleet) Validate() error {
	v := &validator{lines: map[string]int{}}
	v.fleet(f)
	if len(v.errs) > 0 {
		return v.errs
	}
	return nil
}
