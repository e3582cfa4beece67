package fleet

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// Tagged generated fleets: the hostile keys and values survive the YAML round trip, the
// seed alone decides them, and tagging changes nothing but tags.
func TestWithTagsOnGeneratedFleets(t *testing.T) {
	hostile := map[string]bool{}
	for seed := uint64(1); seed <= 24; seed++ {
		base, err := Generate(rand.New(rand.NewPCG(seed, 7)), 12)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		tagged, err := WithTags(base, rand.New(rand.NewPCG(seed, 35)))
		if err != nil {
			t.Fatalf("seed %d: tagged fleet does not parse: %v", seed, err)
		}
		again, err := WithTags(base, rand.New(rand.NewPCG(seed, 35)))
		if err != nil || !reflect.DeepEqual(tagged, again) {
			t.Fatalf("seed %d: the same seed gave other tags (err %v)", seed, err)
		}
		for i, e := range tagged.Endpoints {
			if base.Endpoints[i].Tags != nil {
				t.Fatalf("seed %d: WithTags changed its input's endpoint %s", seed, e.Name)
			}
			stripped := e
			stripped.Tags, stripped.InferenceComponents = nil, nil
			plain := base.Endpoints[i]
			plain.InferenceComponents = nil
			if !reflect.DeepEqual(stripped, plain) || len(e.InferenceComponents) != len(base.Endpoints[i].InferenceComponents) {
				t.Errorf("seed %d: tagging changed more than the tags of %s", seed, e.Name)
			}
			for _, tags := range append([]map[string]string{e.Tags}, icTags(e)...) {
				for k, v := range tags {
					if strings.ContainsAny(k+v, ` ."|`) || !isASCII(k+v) {
						hostile[k+"="+v] = true
					}
				}
			}
		}
	}
	if len(hostile) < 5 {
		t.Errorf("24 seeds gave only %d tags with dots, spaces, quotes, | or UTF-8: %v", len(hostile), hostile)
	}
}

func icTags(e Endpoint) []map[string]string {
	out := make([]map[string]string, len(e.InferenceComponents))
	for i, ic := range e.InferenceComponents {
		out[i] = ic.Tags
	}
	return out
}

func isASCII(s string) bool { return utf8.RuneCountInString(s) == len(s) }

func TestTaggedFamilies(t *testing.T) {
	for _, c := range []struct {
		families []string
		want     map[string]bool
	}{
		{nil, map[string]bool{TagsVended: true, TagsEngine: false, TagsDCGM: false, TagsNode: false}},
		{[]string{TagsEngine, TagsNode}, map[string]bool{TagsVended: false, TagsEngine: true, TagsDCGM: false, TagsNode: true}},
	} {
		f := &Fleet{TagFamilies: c.families}
		for fam, want := range c.want {
			if got := f.Tagged(fam); got != want {
				t.Errorf("tag_families %v: Tagged(%s) = %v, want %v", c.families, fam, got, want)
			}
		}
	}
}
