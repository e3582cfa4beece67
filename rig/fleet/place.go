package fleet

import (
	"fmt"
	"sort"
)

// Placed is one instance of an endpoint after expanding its groups.
type Placed struct {
	Group int // index into Endpoint.Instances
	InstanceGroup
}

// Slot is a place for one model copy: a container on GPUs of one instance. IC endpoints get
// MaxCopies slots per IC (the first Copies are active at start; the rest are where scale-out
// lands); single-model endpoints get one slot per instance using all its GPUs.
type Slot struct {
	IC       int // index into Endpoint.InferenceComponents, -1 for single-model endpoints
	Copy     int // copy number within the IC (or instance number for single-model)
	Instance int // index into Layout.Instances
	GPUs     []int
}

// Layout is the deterministic placement of an endpoint's copies onto its instances.
type Layout struct {
	Instances []Placed
	Slots     []Slot
}

// Place expands instance groups (interleaved across AZs, so consecutive instances sit in
// different zones) and places copies first-fit starting at a rotating instance, which spreads
// copies over zones like SageMaker's default placement. Initial copies must fit; extra
// autoscaling slots are added while GPUs remain.
func Place(e *Endpoint) (*Layout, error) {
	l := &Layout{Instances: interleave(e.Instances)}
	free := make([][]int, len(l.Instances))
	for i, in := range l.Instances {
		for g := 0; g < in.GPUs; g++ {
			free[i] = append(free[i], g)
		}
	}
	if !e.IsIC() {
		for i := range l.Instances {
			l.Slots = append(l.Slots, Slot{IC: -1, Copy: i, Instance: i, GPUs: free[i]})
		}
		return l, nil
	}
	// One cursor per IC so that each IC's copies walk the AZ-interleaved instances.
	cursors := make([]int, len(e.InferenceComponents))
	for j := range cursors {
		cursors[j] = j
	}
	place := func(ic, copyN, gpus int) bool {
		for k := 0; k < len(l.Instances); k++ {
			i := (cursors[ic] + k) % len(l.Instances)
			if len(free[i]) >= gpus {
				l.Slots = append(l.Slots, Slot{IC: ic, Copy: copyN, Instance: i, GPUs: free[i][:gpus:gpus]})
				free[i] = free[i][gpus:]
				cursors[ic] = i + 1
				return true
			}
		}
		return false
	}
	maxCopies := 0
	for _, ic := range e.InferenceComponents {
		maxCopies = max(maxCopies, ic.MaxCopies)
	}
	// Round-robin over ICs so that no IC takes all the room of the others; every IC's
	// initial copies are placed before any extra autoscaling slot.
	for _, initial := range []bool{true, false} {
		for n := 0; n < maxCopies; n++ {
			for j, ic := range e.InferenceComponents {
				if n >= ic.MaxCopies || (n < ic.Copies) != initial {
					continue
				}
				if !place(j, n, ic.GPUsPerCopy) && initial {
					return nil, fmt.Errorf("copy %d of %s (%d GPUs) does not fit on the free GPUs of %s", n+1, ic.Name, ic.GPUsPerCopy, e.Name)
				}
			}
		}
	}
	sort.SliceStable(l.Slots, func(a, b int) bool {
		if l.Slots[a].IC != l.Slots[b].IC {
			return l.Slots[a].IC < l.Slots[b].IC
		}
		return l.Slots[a].Copy < l.Slots[b].Copy
	})
	return l, nil
}

// interleave expands groups into instances ordered a, b, c, a, b, c by AZ.
func interleave(groups []InstanceGroup) []Placed {
	byAZ := map[string][]Placed{}
	var azs []string
	for gi, g := range groups {
		if _, ok := byAZ[g.AZ]; !ok {
			azs = append(azs, g.AZ)
		}
		for n := 0; n < g.Count; n++ {
			byAZ[g.AZ] = append(byAZ[g.AZ], Placed{Group: gi, InstanceGroup: g})
		}
	}
	var out []Placed
	for more := true; more; {
		more = false
		for _, az := range azs {
			if q := byAZ[az]; len(q) > 0 {
				out = append(out, q[0])
				byAZ[az] = q[1:]
				more = true
			}
		}
	}
	return out
}
