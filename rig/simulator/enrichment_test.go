package simulator

import (
	"testing"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// enrichment-off: the account publishes engine, DCGM and host series but no enriched vended
// metric; healthy publishes both.
func TestEnrichmentOff(t *testing.T) {
	for _, c := range []struct {
		scenario   string
		wantVended bool
	}{{"healthy", true}, {"enrichment-off", false}} {
		db := backfilled(t, c.scenario, 1)
		for _, m := range []string{sc.DCGMGPUUtil, sc.VLLMRunning, sc.NodeMemTotal} {
			if len(query(t, db, m, sc.LabelHostID)) == 0 {
				t.Errorf("%s: no %s", c.scenario, m)
			}
		}
		vended := query(t, db, `count({"@instrumentation.@name"="`+sc.ScopeSageMakerVended+`", __name__=~".+"})`, "")
		if got := len(vended) > 0; got != c.wantVended {
			t.Errorf("%s: vended series present = %v, want %v", c.scenario, got, c.wantVended)
		}
	}
}
