package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/internal/promtest"
)

// heapSampler records the peak live heap (as measured by each GC cycle) while it runs.
type heapSampler struct {
	stop chan struct{}
	done chan uint64
}

func sampleHeap() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan uint64)}
	go func() {
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-h.stop:
				h.done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) peak() uint64 { close(h.stop); return <-h.done }

func heapNow() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// loadLargeAnswers runs n concurrent single-query requests (as n viewers loading a heavy
// panel) through the production client against an upstream answering body, and returns
// the peak heap growth and the responses' errors.
func loadLargeAnswers(t *testing.T, body []byte, chunked bool, n, budgetMiB int) (uint64, []error) {
	t.Helper()
	// The answers start only once every request has arrived (or after a second), so the
	// load is truly concurrent however the machine schedules the callers.
	var arrived sync.WaitGroup
	arrived.Add(n)
	allIn := make(chan struct{})
	go func() { arrived.Wait(); close(allIn) }()
	var once sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, seen := once.LoadOrStore(r, true); !seen {
			arrived.Done()
		}
		select {
		case <-allIn:
		case <-time.After(time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		for rest := body; len(rest) > 0; {
			k := min(len(rest), 256<<10)
			w.Write(rest[:k])
			if chunked {
				w.(http.Flusher).Flush()
			}
			rest = rest[k:]
		}
	}))
	defer srv.Close()
	jd, _ := json.Marshal(map[string]any{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": srv.URL,
		"memoryBudgetMiB": budgetMiB, "maxConcurrency": 30, "requestsPerSecond": 300, "cacheSizeMiB": 0})
	d := newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{
		UID: "big", JSONData: jd, DecryptedSecureJSONData: map[string]string{"accessKey": fakeAccessKey, "secretKey": fakeSecretKey},
	})
	base := heapNow()
	h := sampleHeap()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := d.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
				dataQuery("A", `{"expr":"m","range":true}`),
			}})
			if err != nil {
				errs[i] = err
				return
			}
			dr := resp.Responses["A"]
			if dr.Error != nil {
				errs[i] = dr.Error
			} else if len(dr.Frames) == 0 {
				errs[i] = fmt.Errorf("no frames")
			}
		}()
	}
	wg.Wait()
	peak := h.peak()
	return peak - min(base, peak), errs
}

// TestMemoryBudgetBoundsConcurrentLargeAnswers drives many concurrent large answers
// through the plugin and shows peak live heap growth stays within the budget, while the
// same load under a budget that never binds grows to at least twice the bounded peak (so
// the measurement can fail).
func TestMemoryBudgetBoundsConcurrentLargeAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: decodes about 100 MB of JSON")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	body := promtest.LargeMatrix(40, 5000) // ≈5 MB, 200k points
	const budgetMiB, viewers = 32, 10
	const bound = uint64(budgetMiB) << 20
	var boundedPeak uint64
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			peak, errs := loadLargeAnswers(t, body, chunked, viewers, budgetMiB)
			ok := 0
			for i, err := range errs {
				switch {
				case err == nil:
					ok++
				case chunked && strings.Contains(err.Error(), "too many large queries at once"):
					// Answers of unknown length cannot be reserved up front: when the ones
					// reading at once fill the budget, some fail instead of all waiting.
				default:
					t.Errorf("viewer %d: %v", i, err)
				}
			}
			if ok == 0 {
				t.Error("no viewer got its frames")
			}
			t.Logf("%d of %d viewers got frames", ok, viewers)
			t.Logf("%d concurrent %.1f MB answers, budget %d MiB: peak heap growth %.1f MiB", viewers, float64(len(body))/1e6, budgetMiB, float64(peak)/(1<<20))
			if peak > bound {
				t.Errorf("peak heap growth %.1f MiB exceeds the %d MiB budget", float64(peak)/(1<<20), budgetMiB)
			}
			boundedPeak = max(boundedPeak, peak)
		})
	}
	t.Run("control: a budget that never binds", func(t *testing.T) {
		peak, _ := loadLargeAnswers(t, body, false, viewers, 4096)
		t.Logf("unbounded: peak heap growth %.1f MiB", float64(peak)/(1<<20))
		if peak < 2*boundedPeak {
			t.Errorf("without a binding budget peak growth was only %.1f MiB (bounded: %.1f MiB): the load shows nothing", float64(peak)/(1<<20), float64(boundedPeak)/(1<<20))
		}
	})
}

// TestMemoryBudgetRefusesAnAnswerLargerThanItself: one answer that alone exceeds the
// budget fails at once with advice to narrow the query, whether or not its length is known.
func TestMemoryBudgetRefusesAnAnswerLargerThanItself(t *testing.T) {
	body := promtest.LargeMatrix(60, 3000) // ≈4.7 MB: about 19 MiB at 4 bytes per byte, over the 16 MiB minimum budget
	for _, chunked := range []bool{false, true} {
		_, errs := loadLargeAnswers(t, body, chunked, 1, 16)
		if errs[0] == nil || !strings.Contains(errs[0].Error(), "narrow the query") || !strings.Contains(errs[0].Error(), "jsonData.memoryBudgetMiB") {
			t.Errorf("chunked=%v: err %v, want the budget's narrow-the-query error", chunked, errs[0])
		}
	}
}
