package awsapi

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

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
