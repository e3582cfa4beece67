//go:build inferscope_testpanic

package diagnosis

import (
	"context"
	"time"
)

// PanicRange is the range length for which the test-panic rule panics. This file is compiled
// only with the build tag inferscope_testpanic, which the process test (rig/itest/process)
// sets when it builds the plugin binary: a shipped binary has no way to make a rule panic.
// The trigger is the range, not the scope, because a scope without data is refused before
// any rule runs.
const PanicRange = 17 * time.Minute

func init() {
	allRules = append(allRules, rule{id: "test-panic", panel: panelErrors, run: func(_ context.Context, e *env) ([]Finding, error) {
		if e.end.Sub(e.start) == PanicRange {
			var none []Finding
			return none[len(none)-1:], nil // slice bounds out of range
		}
		return nil, nil
	}})
}
