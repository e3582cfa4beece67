package plugin

import (
	"context"
	"strings"
	"testing"
)

// TestResourceLabelValuesDotSegments: label names that are or decode to "." / ".." (raw,
// percent-encoded, U__-escaped) are refused with a clear error and never reach CloudWatch,
// through the production client.
func TestResourceLabelValuesDotSegments(t *testing.T) {
	f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	d := newRealDatasource(t, context.Background(), f.settings("us-east-1", fakeAccessKey, fakeSecretKey))
	for _, name := range []string{"..", ".", "%2e%2e", "%2E", "U___2e__2e_", "U___2e_", "%252e%252e"} {
		resp := callResource(t, d, resourceCall{method: "GET", path: "api/v1/label/" + name + "/values"})
		if resp.Status != 400 || !strings.Contains(string(resp.Body), "cannot be sent in a URL path") {
			t.Errorf("%s: status %d body %s, want 400 naming the path segment", name, resp.Status, resp.Body)
		}
	}
	if n := f.requests.Load(); n != 0 {
		t.Errorf("%d requests reached CloudWatch, want none", n)
	}
}
