package fleet

import (
	"math/rand/v2"

	"go.yaml.in/yaml/v3"
)

// Tag pools for WithTags: dots, spaces, UTF-8, quotes and regex metacharacters, so every
// place a tag becomes a label name, a matcher value or a regex is exercised.
var (
	genTagKeys   = []string{"cost.center", "Owner Name", "équipe", `it's "quoted"`, "a|b(c)*", "Environment"}
	genTagValues = []string{"search", "ads.ranking", "data platform", "Ωmega — recherche", `say "hi"`, `x.*+?^$|()[]{}\`, "search-2", "ml/infra:prod"}
)

// TeamKey is the tag every endpoint WithTags tags carries (most of them; some stay
// untagged), so tests can filter by one key.
const TeamKey = "Team"

// WithTags returns f with seeded resource tags: most endpoints get a Team and up to two
// other tags from hostile pools; most of their ICs get the same tags, some their own Team,
// some none. It draws only from r, so the fleet Generate made from its own seed stays as
// it was. The result goes through Parse like a user's file.
func WithTags(f *Fleet, r *rand.Rand) (*Fleet, error) {
	out := *f
	out.Endpoints = append([]Endpoint(nil), f.Endpoints...)
	for i := range out.Endpoints {
		e := &out.Endpoints[i]
		e.InferenceComponents = append([]InferenceComponent(nil), e.InferenceComponents...)
		e.Tags = nil
		if r.IntN(5) > 0 {
			e.Tags = map[string]string{TeamKey: genTagValues[r.IntN(len(genTagValues))]}
			for range r.IntN(3) {
				e.Tags[genTagKeys[r.IntN(len(genTagKeys))]] = genTagValues[r.IntN(len(genTagValues))]
			}
		}
		for j := range e.InferenceComponents {
			ic := &e.InferenceComponents[j]
			switch r.IntN(4) {
			case 0:
				ic.Tags = nil
			case 1:
				ic.Tags = map[string]string{TeamKey: genTagValues[r.IntN(len(genTagValues))]}
			default:
				ic.Tags = e.Tags
			}
		}
	}
	doc, err := yaml.Marshal(&out)
	if err != nil {
		return nil, err
	}
	return Parse("generated.yaml", doc)
}
