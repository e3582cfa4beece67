package semconv

import (
	"maps"
	"slices"
	"strings"
)

// TagsText writes resource tags on one line, keys in order ("Key=Value; …"): the tags
// column of the diagnosis and inventory tables.
func TagsText(tags map[string]string) string {
	parts := make([]string, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, k+"="+tags[k])
	}
	return strings.Join(parts, "; ")
}
