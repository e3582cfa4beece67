package awsemu

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

// endpoint is SageMaker's view of one fleet endpoint.
type endpoint struct {
	name, arn, status, config string
	created, modified         time.Time
	variant                   variant
	model                     string // single-model endpoints: the SageMaker model name
	components                []*component
	tags                      map[string]string
}

type variant struct {
	name, instanceType string
	instances          int
}

type component struct {
	name, arn, endpoint, endpointARN, variant, status, model string
	image                                                    string
	gpus, copies                                             int
	created, modified                                        time.Time
	tags                                                     map[string]string
	// The autoscaling registered for it (autoscaling.go): copies and target per copy.
	minCopies, maxCopies int
	target               float64
}

// Status values SageMaker reports for running endpoints and ICs.
const statusInService = "InService"

// inventory builds the region's endpoints from the fleet and the simulator's current copy
// counts and scaling times. Creation times are spread deterministically over the days
// before the history (origin), so listing by CreationTime has an order to keep.
// The changes made so far set endpoints' configs and ICs' images, and their modified times.
func inventory(f *fleet.Fleet, deps []simulator.Deployment, changes []simulator.Change, origin time.Time) []*endpoint {
	byIC := map[string]simulator.Deployment{}
	for _, d := range deps {
		byIC[d.Endpoint+"/"+d.IC] = d
	}
	var out []*endpoint
	for i := range f.Endpoints {
		fe := &f.Endpoints[i]
		created := origin.Add(-time.Duration(24+stableHash(fe.Name)%(24*14)) * time.Hour)
		e := &endpoint{
			name: fe.Name, arn: arn(f, fe, "endpoint", fe.Name), status: statusInService, config: fe.Name + "-config",
			created: created, modified: created.Add(12 * time.Minute),
			variant: variant{name: fe.Variant, instanceType: fe.Instances[0].Type, instances: fe.InstanceCount()},
			tags:    fe.Tags,
		}
		if !fe.IsIC() {
			e.model = fe.Model
		}
		for j := range fe.InferenceComponents {
			ic := &fe.InferenceComponents[j]
			c := &component{
				name: ic.Name, arn: arn(f, fe, "inference-component", ic.Name), endpoint: fe.Name, endpointARN: e.arn,
				variant: fe.Variant, status: statusInService, model: ic.Model, gpus: ic.GPUsPerCopy, copies: ic.Copies,
				image:     simulator.Image(f.Region, ic.Engine, simulator.BaseImageVersion),
				created:   e.modified.Add(time.Duration(j+1) * 7 * time.Minute),
				minCopies: ic.MinCopies, maxCopies: ic.MaxCopies, target: ic.TargetConcurrencyPerCopy, tags: ic.Tags,
			}
			c.modified = c.created
			if d, ok := byIC[fe.Name+"/"+ic.Name]; ok {
				c.copies = d.Copies
				if !d.LastScaled.IsZero() {
					c.modified = d.LastScaled
				}
			}
			e.components = append(e.components, c)
		}
		applyChanges(e, changes)
		out = append(out, e)
	}
	return out
}

// arn is a SageMaker ARN in the endpoint's account; SageMaker lowercases the resource name in it.
func arn(f *fleet.Fleet, e *fleet.Endpoint, kind, name string) string {
	return fmt.Sprintf("arn:aws:sagemaker:%s:%s:%s/%s", f.Region, f.AccountOf(e), kind, strings.ToLower(name))
}

func stableHash(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// applyChanges sets what the changes to e and its ICs set, in time order.
func applyChanges(e *endpoint, changes []simulator.Change) {
	for _, ch := range changes {
		if ch.Endpoint != e.name {
			continue
		}
		if ch.IC == "" && ch.Config != "" {
			e.config, e.modified = ch.Config, ch.Time
		}
		for _, c := range e.components {
			if c.name == ch.IC && ch.Image != "" {
				c.image, c.modified = ch.Image, ch.Time
			}
		}
	}
}
