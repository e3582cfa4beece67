package replicas_test

import (
	"context"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// TestStoreIsolation: on one store, an answer one replica fetched is read by another
// replica of the same data source (no upstream call), and by no other org, data source or
// credential identity (each makes its own call). It fails if the namespace dropped the org,
// the uid or the credential hash.
func TestStoreIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the plugin and runs replicas against the emulator and redis-server")
	}
	r := startRig(t, smallFleet)
	owner := r.dataSource("iso", r.shared(nil))
	cases := []struct {
		name  string
		ds    *backend.DataSourceInstanceSettings
		org   int64
		calls int // upstream calls for the panel the owner fetched
	}{
		{"another replica of the data source", owner, 1, 0},
		{"the same uid in another org", owner, 2, 1},
		{"another data source of the account", r.dataSource("iso-other", r.shared(nil)), 1, 1},
		{"the same org and uid with another credential identity", r.dataSource("iso", r.shared(nil), map[string]any{"endpoint": r.endpoint(t)}), 1, 1},
	}
	expr, q := probe(int(probes.Add(1)))
	ask := func(t *testing.T, ds *backend.DataSourceInstanceSettings, org int64) int {
		t.Helper()
		reps, _ := r.replicas(t, 1, ds, org)
		before := r.meter.Count()
		resp, err := reps[0].client.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil {
			t.Fatal(err)
		}
		if dr := resp.Responses[q.RefID]; dr.Error != nil || len(dr.Frames) == 0 {
			t.Fatalf("the panel failed: %v (%d frames)", dr.Error, len(dr.Frames))
		}
		n := 0
		for _, c := range r.meter.Since(before) {
			if c.Query == expr {
				n++
			}
		}
		return n
	}
	if n := ask(t, owner, 1); n != 1 {
		t.Fatalf("the owner made %d upstream calls for a new panel, want 1", n)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if n := ask(t, tc.ds, tc.org); n != tc.calls {
				t.Errorf("%d upstream calls, want %d", n, tc.calls)
			}
		})
	}
}
