package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// heldRanges answers instant queries at once and holds range queries until release is
// closed, telling arrived of each.
type heldRanges struct {
	arrived chan struct{}
	release chan struct{}
}

func (h *heldRanges) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/query_range") {
		h.arrived <- struct{}{}
		<-h.release
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[%d,"1"]]}]}}`, time.Now().Unix())
		return
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%d,"1"]}]}}`, time.Now().Unix())
}

// queries is a request of one query per expression over the last six hours at a one
// minute step: 361 points as range queries, one as instant ones.
func queries(instant bool, exprs ...string) *backend.QueryDataRequest {
	now := time.Now()
	req := &backend.QueryDataRequest{}
	for i, e := range exprs {
		raw, _ := json.Marshal(map[string]any{"expr": e, "instant": instant, "range": !instant})
		req.Queries = append(req.Queries, backend.DataQuery{RefID: fmt.Sprintf("Q%d", i), JSON: raw,
			TimeRange: backend.TimeRange{From: now.Add(-6 * time.Hour), To: now}, Interval: time.Minute, MaxDataPoints: 1000})
	}
	return req
}

// Range queries may hold only half of the upstream slots: a stat panel's one instant
// query that comes while eight range queries wait upstream (four held there, four waiting
// for the other slots of their half) is answered at once. Without the reserve the range
// queries would hold all eight slots and the stat panel would wait for them.
func TestStatPanelBesideHeldRangeQueries(t *testing.T) {
	up := &heldRanges{arrived: make(chan struct{}, 8), release: make(chan struct{})}
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
	d := newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{UID: "reserve", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{"accessKey": fakeAccessKey, "secretKey": fakeSecretKey}})

	var ranges []string
	for i := range 8 {
		ranges = append(ranges, fmt.Sprintf("range_%d", i))
	}
	rangesDone := make(chan *backend.QueryDataResponse, 1)
	go func() {
		resp, _ := d.QueryData(context.Background(), queries(false, ranges...))
		rangesDone <- resp
	}()
	for i := range 4 {
		select {
		case <-up.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of the range queries sent upstream, want 4", i)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := d.QueryData(ctx, queries(true, "stat_total"))
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.Responses["Q0"]; r.Error != nil || len(r.Frames) == 0 {
		t.Fatalf("stat panel beside the held range queries: error %v, %d frames", r.Error, len(r.Frames))
	}
	select {
	case <-up.arrived:
		t.Error("a fifth range query was sent upstream with 8 slots, at most 4 of them for range queries")
	default:
	}

	close(up.release)
	released = true
	done := <-rangesDone
	for _, q := range queries(false, ranges...).Queries {
		if r := done.Responses[q.RefID]; r.Error != nil || len(r.Frames) == 0 {
			t.Errorf("range query %s: error %v, %d frames", q.RefID, r.Error, len(r.Frames))
		}
	}
}
