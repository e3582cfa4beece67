package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// TestAccountCountsServesTheAccountsAnswers: after two queries and a discovery call over a
// discovery rate of one call per 1000 s, /emulator/account reads 2 queries and 1 discovery call
// admitted and 1 throttled, for the fleet's account.
func TestAccountCountsServesTheAccountsAnswers(t *testing.T) {
	st, err := stack.Start(context.Background(), stack.Options{History: 10 * time.Minute, End: stack.PinnedEnd, Limits: emulator.Limits{DiscoveryTPS: 0.001}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c := &http.Client{Transport: awsauth.NewSigner(http.DefaultTransport,
		credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), st.Region, awsauth.SigningService, nil)}
	for _, path := range []string{"/api/v1/query?query=1", "/api/v1/query?query=2", "/api/v1/labels", "/api/v1/labels"} {
		resp, err := c.Get(st.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	rec := httptest.NewRecorder()
	accountCounts(st.Account())(rec, httptest.NewRequest(http.MethodGet, "/emulator/account", nil))
	var got struct {
		Account string `json:"account"`
		Counts  struct {
			Query, Discovery struct{ Admitted, Throttled, Rejected int64 }
		} `json:"counts"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	n := got.Counts
	if got.Account != st.Fleet.Account || n.Query.Admitted != 2 || n.Discovery.Admitted != 1 || n.Discovery.Throttled != 1 || n.Query.Throttled+n.Query.Rejected+n.Discovery.Rejected != 0 {
		t.Errorf("served %s, want account %s with 2 queries and 1 discovery call admitted, 1 throttled", rec.Body, st.Fleet.Account)
	}
}
