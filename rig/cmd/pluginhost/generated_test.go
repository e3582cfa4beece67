package main

import (
	"regexp"
	"slices"
	"testing"
)

func TestGeneratedHostsDistinctAndSeeded(t *testing.T) {
	a, b, other := generatedHosts(5000, 1), generatedHosts(5000, 1), generatedHosts(5000, 2)
	if !slices.Equal(a, b) || slices.Equal(a, other) {
		t.Fatal("the same seed must give the same ids and another seed others")
	}
	shape := regexp.MustCompile(`^i-0[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for _, h := range a {
		if !shape.MatchString(h) || seen[h] {
			t.Fatalf("id %q: want distinct ids shaped like i-0 and 16 hex digits", h)
		}
		seen[h] = true
	}
	if len(seen) != 5000 {
		t.Fatalf("%d ids, want 5000", len(seen))
	}
}
