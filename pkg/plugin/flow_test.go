package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// heldUpstream answers instant queries; those whose expression starts with "table" are
// held until release is closed, and counted while they wait.
type heldUpstream struct {
	mu      sync.Mutex
	held    int
	release chan struct{}
}

func (h *heldUpstream) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	if strings.HasPrefix(r.Form.Get("query"), "table") {
		h.mu.Lock()
		h.held++
		h.mu.Unlock()
		<-h.release
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"1"]}]}}`, time.Now().Unix())
}

func (h *heldUpstream) heldNow() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

func instantQueries(exprs ...string) *backend.QueryDataRequest {
	now := time.Now()
	req := &backend.QueryDataRequest{}
	for i, e := range exprs {
		raw, _ := json.Marshal(map[string]any{"expr": e, "instant": true, "range": false})
		req.Queries = append(req.Queries, backend.DataQuery{RefID: fmt.Sprintf("Q%d", i), JSON: raw,
			TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}, Interval: time.Minute, MaxDataPoints: 100})
	}
	return req
}

// A table panel's ten one-point queries may not take every upstream slot: a stat panel
// that comes after them is sent while they all still wait for their answers (each
// QueryData request is one flow, and the limiter keeps a quarter of its slots for flows'
// first requests).
func TestStatPanelNotHeldBehindTableColumns(t *testing.T) {
	up := &heldUpstream{release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(up.serve))
	defer srv.Close()
	released := false
	defer func() {
		if !released {
			close(up.release)
		}
	}()
	jd, _ := json.Marshal(map[string]any{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": srv.URL,
		"maxConcurrency": 8, "requestsPerSecond": 300, "cacheSizeMiB": 0})
	d := newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{UID: "flows", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{"accessKey": fakeAccessKey, "secretKey": fakeSecretKey}})

	var columns []string
	for i := range 10 {
		columns = append(columns, fmt.Sprintf("table_column_%d", i))
	}
	tableDone := make(chan *backend.QueryDataResponse, 1)
	go func() {
		resp, _ := d.QueryData(context.Background(), instantQueries(columns...))
		tableDone <- resp
	}()
	// The table's first query and six more (8 slots less the 2 kept for first queries).
	deadline := time.Now().Add(10 * time.Second)
	for up.heldNow() < 7 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for an eighth, which must not come
	if got := up.heldNow(); got != 7 {
		t.Fatalf("%d of the table's queries sent with 8 slots, want 7", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := d.QueryData(ctx, instantQueries("stat_total"))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Responses["Q0"]; r.Error != nil || len(r.Frames) == 0 {
		t.Fatalf("stat panel while the table's queries wait: error %v, %d frames", r.Error, len(r.Frames))
	}

	close(up.release)
	released = true
	table := <-tableDone
	for _, c := range instantQueries(columns...).Queries {
		if r := table.Responses[c.RefID]; r.Error != nil || len(r.Frames) == 0 {
			t.Errorf("table column %s: error %v, %d frames", c.RefID, r.Error, len(r.Frames))
		}
	}
}
