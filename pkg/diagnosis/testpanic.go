//go:build inferscope_testpanic

package diagnosis

import "context"

// PanicEndpoint is the endpoint scope for which the test-panic rule panics. This file is
// compiled only with the build tag inferscope_testpanic, which the process test sets when it
// builds the plugin binary: a shipped binary has no way to make a rule panic.
const PanicEndpoint = "inferscope-test-panic"

func init() {
	allRules = append(allRules, rule{id: "test-panic", panel: panelErrors, run: func(_ context.Context, e *env) ([]Finding, error) {
		if e.scope.Endpoint == PanicEndpoint {
			var none []Finding
			return none[len(none)-1:], nil // slice bounds out of range, as rule_az once did
		}
		return nil, nil
	}})
}
