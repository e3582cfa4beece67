package alerts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// countingProxy sits between the plugin and the emulator and counts query requests and the
// series each answer holds (what CloudWatch would bill and cap at 500).
type countingProxy struct {
	mu       sync.Mutex
	requests int
	series   []int
}

func (c *countingProxy) reset() (requests int, series []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	requests, series = c.requests, c.series
	c.requests, c.series = 0, nil
	return requests, series
}

func (c *countingProxy) start(t testing.TB, upstream string) string {
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		// The Host header stays the one the plugin signed (SigV4 covers it).
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host },
		ModifyResponse: func(resp *http.Response) error {
			if !strings.Contains(resp.Request.URL.Path, "/api/v1/query") {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			var r struct {
				Data struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			_ = json.Unmarshal(body, &r)
			c.mu.Lock()
			c.requests++
			c.series = append(c.series, len(r.Data.Result))
			c.mu.Unlock()
			return nil
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLimits200Instances evaluates every rule each minute for a few minutes on a generated
// 200-instance fleet (8 GPUs each) and counts the upstream requests and returned series per
// evaluation: one request per rule, and every result far under CloudWatch's 500 series. The
// emulator enforces CloudWatch's scan limits too, so a rule reading too much fails here.
// Worst cases are bounded by each grouping's cardinality, printed alongside.
func TestLimits200Instances(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: backfills 3 h of a 200-instance fleet")
	}
	t.Parallel()
	rules := loadRules(t)
	proxy := &countingProxy{}
	st, ds := startPlugin(t, stack.Options{Scenario: "healthy", Seed: 7, History: 3 * time.Hour, End: stack.PinnedEnd, Fleet: fleet.Large(200, 8)},
		func(jd map[string]string) { jd["endpoint"] = proxy.start(t, jd["endpoint"]) })
	ctx := context.Background()
	type count struct{ requests, maxSeries int }
	per := map[string]*count{}
	var perEval []int
	for i := 2; i >= 0; i-- {
		at := st.End.Add(-time.Duration(i) * time.Minute)
		total := 0
		for _, r := range rules {
			s := newRuleState(r)
			if err := s.evaluate(ctx, ds, at); err != nil {
				t.Fatal(err)
			}
			reqs, series := proxy.reset()
			c := per[r.UID]
			if c == nil {
				c = &count{}
				per[r.UID] = c
			}
			c.requests = max(c.requests, reqs)
			for _, n := range series {
				c.maxSeries = max(c.maxSeries, n)
				if n >= 500 {
					t.Errorf("%s returned %d series: at CloudWatch's limit, the result is cut", r.UID, n)
				}
			}
			if reqs != 1 {
				t.Errorf("%s sent %d upstream requests in one evaluation, want 1", r.UID, reqs)
			}
			total += reqs
		}
		perEval = append(perEval, total)
	}
	// The largest result each rule could return: the cardinality of its grouping.
	bounds := map[string]string{
		"endpoint/IC":        `count(count by ("aws.sagemaker.endpoint.name", "aws.sagemaker.inference_component.name") (DCGM_FI_DEV_GPU_UTIL))`,
		"instance/IC":        `count(count by ("aws.sagemaker.endpoint.name", "aws.sagemaker.inference_component.name", "@resource.host.id") (DCGM_FI_DEV_GPU_UTIL))`,
		"endpoint/AZ":        `count(count by ("aws.sagemaker.endpoint.name", "@resource.cloud.availability_zone") (node_memory_MemTotal_bytes))`,
		"IC (classic)":       `count(count by (InferenceComponentName) (ConcurrentRequestsPerCopy))`,
		"endpoint (classic)": `count(count by (EndpointName) (Invocations))`,
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "rule\trequests/eval\tmax series returned")
	for _, r := range rules {
		fmt.Fprintf(w, "%s\t%d\t%d\n", r.UID, per[r.UID].requests, per[r.UID].maxSeries)
	}
	fmt.Fprintln(w, "\ngrouping\tworst-case series")
	for _, name := range []string{"endpoint/IC", "instance/IC", "endpoint/AZ", "IC (classic)", "endpoint (classic)"} {
		v, err := queryRule(ctx, ds, rule{UID: name, Query: bounds[name], Window: time.Minute}, st.End)
		if err != nil || len(v) != 1 || len(v[0].values) == 0 {
			t.Fatalf("cardinality of %s: %v %v", name, err, v)
		}
		n := v[0].values[len(v[0].values)-1]
		fmt.Fprintf(w, "%s\t%.0f\n", name, n)
		if n >= 500 {
			t.Errorf("grouping %s has %.0f series on 200 instances: a rule grouped that way could hit the 500-series cap", name, n)
		}
	}
	_ = w.Flush()
	t.Logf("200 instances × 8 GPUs, %d rules, requests per one-minute evaluation: %v (%.2f requests/s)\n%s",
		len(rules), perEval, float64(perEval[0])/60, b.String())
}
