package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/internal/promtest"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// peakRSS reads the process's peak resident set (VmHWM) in bytes, from Linux's /proc.
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status for the plugin process: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM line")
	return 0
}

// TestMemoryBudgetOverThePluginProtocol drives 12 concurrent large answers (about 5 MB
// of JSON each) through the built plugin binary over gRPC, once under a 32 MiB memory
// budget and once under a budget that never binds, and compares the processes' peak RSS.
// Under the budget every query still gets its frames (they wait in line), and the peak
// stays within the budget plus the runtime's own share; without it the peak is far higher.
func TestMemoryBudgetOverThePluginProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the plugin binary and decodes about 120 MB of JSON")
	}
	body := promtest.LargeMatrix(40, 5000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer srv.Close()
	bin := buildPlugin(t, t.TempDir())
	const queries, budgetMiB = 12, 32
	run := func(budget int) (growth int64) {
		p := startPlugin(t, bin)
		jd, _ := json.Marshal(map[string]any{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": srv.URL,
			"memoryBudgetMiB": budget, "maxConcurrency": 30, "requestsPerSecond": 300, "cacheSizeMiB": 0})
		pc := backend.PluginContext{OrgID: 1, PluginID: models.PluginID, DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
			ID: 1, UID: "big", Type: models.PluginID, JSONData: jd, Updated: time.Now(),
			DecryptedSecureJSONData: map[string]string{"accessKey": "AKIDBUDGETTEST", "secretKey": "budget-test-secret"}}}
		ask := func() error {
			q := backend.DataQuery{RefID: "A", JSON: []byte(`{"expr":"m","range":true}`), MaxDataPoints: 5000, Interval: 15 * time.Second,
				TimeRange: backend.TimeRange{From: time.Unix(1_700_000_000, 0), To: time.Unix(1_700_000_000+5000*15, 0)}}
			resp, err := p.QueryData(context.Background(), &backend.QueryDataRequest{PluginContext: pc, Queries: []backend.DataQuery{q}})
			if err != nil {
				return err
			}
			if dr := resp.Responses["A"]; dr.Error != nil || len(dr.Frames) == 0 {
				return fmt.Errorf("error %v, %d frames", dr.Error, len(dr.Frames))
			}
			return nil
		}
		if err := ask(); err != nil { // warm up: the instance, the connection, the runtime
			t.Fatal(err)
		}
		base := peakRSS(t, p.PID)
		var wg sync.WaitGroup
		for i := range queries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := ask(); err != nil {
					t.Errorf("budget %d MiB, query %d: %v", budget, i, err)
				}
			}()
		}
		wg.Wait()
		return peakRSS(t, p.PID) - base
	}
	bounded := run(budgetMiB)
	unbounded := run(4096)
	t.Logf("%d concurrent %.1f MB answers over gRPC: peak RSS growth %.0f MiB under a %d MiB budget, %.0f MiB without a binding budget",
		queries, float64(len(body))/1e6, float64(bounded)/(1<<20), budgetMiB, float64(unbounded)/(1<<20))
	// The Go runtime keeps up to about as much garbage as live heap before collecting, and
	// the gRPC answer is encoded after the budget is released: allow twice the budget.
	if bounded > 2*budgetMiB<<20 {
		t.Errorf("peak RSS grew by %.0f MiB under a %d MiB budget", float64(bounded)/(1<<20), budgetMiB)
	}
	if unbounded < 2*bounded {
		t.Errorf("without a binding budget the peak grew only %.0f MiB (bounded: %.0f MiB): the load shows nothing", float64(unbounded)/(1<<20), float64(bounded)/(1<<20))
	}
}
