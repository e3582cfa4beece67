package awsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	prices "github.com/inferscope/sagemaker-datasource/pkg/pricing"
)

type countingLister struct {
	calls atomic.Int32
	err   error
}

func (c *countingLister) ProbePrices(context.Context) error { c.calls.Add(1); return c.err }

func (c *countingLister) Prices(_ context.Context, region string) ([]prices.Price, error) {
	c.calls.Add(1)
	return []prices.Price{{Region: region, InstanceType: "ml.g5.2xlarge", USDPerHour: 1.5}}, c.err
}

// TestCachedPricesKeepsADay: a region's prices are asked for once a day; regions apart;
// failures are not kept.
func TestCachedPricesKeepsADay(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	up := &countingLister{}
	c := CachedPrices(up, func() time.Time { return now })
	ctx := context.Background()
	for range 3 {
		if p, err := c.Prices(ctx, "us-east-1"); err != nil || len(p) != 1 || p[0].Region != "us-east-1" {
			t.Fatal(p, err)
		}
	}
	if _, err := c.Prices(ctx, "eu-west-1"); err != nil || up.calls.Load() != 2 {
		t.Fatalf("two regions: %d upstream calls, want 2 (%v)", up.calls.Load(), err)
	}
	now = now.Add(23 * time.Hour)
	_, _ = c.Prices(ctx, "us-east-1")
	if up.calls.Load() != 2 {
		t.Errorf("within the day: %d calls", up.calls.Load())
	}
	now = now.Add(time.Hour)
	_, _ = c.Prices(ctx, "us-east-1")
	if up.calls.Load() != 3 {
		t.Errorf("after a day: %d calls, want a new one", up.calls.Load())
	}
	failing := &countingLister{err: errors.New("denied")}
	fc := CachedPrices(failing, func() time.Time { return now })
	_, _ = fc.Prices(ctx, "us-east-1")
	_, _ = fc.Prices(ctx, "us-east-1")
	if failing.calls.Load() != 2 {
		t.Errorf("a failure was kept: %d calls", failing.calls.Load())
	}
}

// pricesFrom is the Price List client on a custom endpoint that answers every call with
// answer(n), n counting the calls from 1.
func pricesFrom(t *testing.T, limit int64, answer func(n int32) (status int, body string)) PriceLister {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, body := answer(n.Add(1))
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	ep, err := awsauth.ResolveEndpoint(testSettings(srv.URL, testRegion))
	if err != nil {
		t.Fatal(err)
	}
	c, err := newPrices(credentials.NewStaticCredentialsProvider(testKey, testSecret, testToken), ep, &secrets{}, options{maxAnswerBytes: limit, backoff: noWait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestPricesFromAHostileUpstream: whatever the endpoint answers, Prices fails with an error
// naming pricing:GetProducts and a fix that fits the Price List (never an alarms hint).
func TestPricesFromAHostileUpstream(t *testing.T) {
	entry := `{"product":{"productFamily":"ML Instance","attributes":{"regionCode":"us-east-1","instanceName":"ml.g5.2xlarge","component":"Hosting"}},` +
		`"terms":{"OnDemand":{"o":{"effectiveDate":"2026-11-01T00:00:00Z","priceDimensions":{"r":{"unit":"Hrs","pricePerUnit":{"USD":"1.515"}}}}}}}`
	page := func(entries []string, next string) string {
		b, _ := json.Marshal(map[string]any{"FormatVersion": "aws_v1", "PriceList": entries, "NextToken": next})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		limit  int64
		answer func(int32) (int, string)
		want   string
	}{
		{"HTML instead of JSON", 0, func(int32) (int, string) { return 200, "<html>proxy login</html>" }, "no proxy rewrites answers"},
		// The page is read as it comes: its bad entry ends the listing, more pages or not.
		{"an entry that is not JSON", 0, func(n int32) (int, string) { return 200, page([]string{entry, "{"}, fmt.Sprint("t", n)) }, "price list entry 1"},
		{"a huge answer", 1024, func(int32) (int, string) { return 200, page(slices.Repeat([]string{entry}, 20), "") }, "jsonData.priceTable"},
		{"endless pages", 0, func(n int32) (int, string) { return 200, page([]string{entry}, fmt.Sprint("t", n)) }, "jsonData.priceTable"},
		{"denied", 0, func(int32) (int, string) {
			return 400, `{"__type":"AccessDeniedException","message":"not authorized to perform: pricing:GetProducts"}`
		}, "add it to the IAM policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pricesFrom(t, tc.limit, tc.answer).Prices(context.Background(), "us-east-1")
			if err == nil || got != nil || !strings.Contains(err.Error(), ActionGetProducts) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "alarm") {
				t.Errorf("prices %v, error %v; want one naming %s and %q", got, err, ActionGetProducts, tc.want)
			}
		})
	}
}

// TestProbePricesReadsAProduct: Save & test's probe passes only when the list's answer
// holds a hosting instance with an hourly USD price; an answer that is not one fails,
// naming pricing:GetProducts and what is wrong, and a denial stays a permission error.
func TestProbePricesReadsAProduct(t *testing.T) {
	product := func(usd string) string {
		return `{"product":{"productFamily":"ML Instance","attributes":{"regionCode":"` + testRegion + `","instanceName":"ml.g5.2xlarge","component":"Hosting"}},` +
			`"terms":{"OnDemand":{"o":{"effectiveDate":"2026-11-01T00:00:00Z","priceDimensions":{"r":{"unit":"Hrs","pricePerUnit":{"USD":"` + usd + `"}}}}}}}`
	}
	page := func(entries ...string) (int, string) {
		b, _ := json.Marshal(map[string]any{"FormatVersion": "aws_v1", "PriceList": entries})
		return 200, string(b)
	}
	for _, tc := range []struct {
		name   string
		answer func() (int, string)
		want   string // "" = passes
	}{
		{"a priced product", func() (int, string) { return page(product("1.515")) }, ""},
		{"an entry that is not JSON", func() (int, string) { return page(`{"product":`) }, "price list entry 0 is not a GetProducts product"},
		{"a price that is not a number", func() (int, string) { return page(product("n/a")) }, "no hosting instance with an hourly USD price"},
		{"no product", func() (int, string) { return page() }, "(0 product(s)) has no hosting instance"},
		{"HTML instead of JSON", func() (int, string) { return 200, "<html>proxy login</html>" }, "no proxy rewrites answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := pricesFrom(t, 0, func(int32) (int, string) { return tc.answer() }).ProbePrices(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("probe failed: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), ActionGetProducts) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("probe error %v, want one naming %s and %q", err, ActionGetProducts, tc.want)
			}
		})
	}
	denied := pricesFrom(t, 0, func(int32) (int, string) {
		return 400, `{"__type":"AccessDeniedException","message":"not authorized to perform: pricing:GetProducts"}`
	})
	if err := denied.ProbePrices(context.Background()); !IsPermission(err) {
		t.Errorf("denied: %v, want a permission error", err)
	}
}
