package promclient

import (
	"net/url"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// maxDecodeRounds bounds how many layers of percent-decoding a proxy in front of
// CloudWatch is assumed to apply; each layer could turn %2e into '.' or %2F into '/'.
const maxDecodeRounds = 4

// checkPathSegment refuses a name that is, or under percent-decoding by a normalising
// proxy becomes, a "." or ".." path segment: /api/v1/label/../values would be resolved
// to a signed call outside the label-values path.
func checkPathSegment(name string) error {
	d := name
	for range maxDecodeRounds {
		for _, piece := range strings.FieldsFunc(d, func(r rune) bool { return r == '/' || r == '\\' }) {
			if piece == "." || piece == ".." {
				return backend.DownstreamErrorf("the label name %q is (or decodes to) the path segment %q, which cannot be sent in a URL path; "+
					"no CloudWatch label has that name: pick a label from the list", truncate(name), piece)
			}
		}
		next, err := url.PathUnescape(d)
		if err != nil || next == d {
			return nil
		}
		d = next
	}
	return nil
}
