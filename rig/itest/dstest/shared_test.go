package dstest

import (
	"os"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// Equal options (a fleet equal by contents, not by address) share one stack; any other
// option gets its own.
func TestSharedStackPerDistinctOptions(t *testing.T) {
	o := stack.Options{Scenario: "healthy", History: 10 * time.Minute, Fleet: fleet.Default()}
	a := Shared(t, o)
	o.Fleet = fleet.Default()
	if b := Shared(t, o); b != a {
		t.Error("the same options over an equal fleet started a second stack")
	}
	if a.End != stack.PinnedEnd || a.Scenario != "healthy" {
		t.Errorf("shared stack ends %s in %s, want %s in healthy", a.End, a.Scenario, stack.PinnedEnd)
	}
	o.Scenario = "kv-saturation"
	if c := Shared(t, o); c == a || c.Scenario != "kv-saturation" {
		t.Errorf("another scenario got stack %p (%s), the healthy one is %p", c, c.Scenario, a)
	}
}
