package awsapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	prtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	prices "github.com/inferscope/sagemaker-datasource/pkg/pricing"
)

// PriceLister reads the on-demand list prices of SageMaker hosting instances in a region
// (pricing:GetProducts, service AmazonSageMaker). Without the permission it returns a
// *PermissionError naming pricing:GetProducts.
type PriceLister interface {
	Prices(ctx context.Context, region string) ([]prices.Price, error)
	// ProbePrices is Save & test's check: one GetProducts call (MaxResults 1), never cached.
	ProbePrices(ctx context.Context) error
}

// Price List constants of the GetProducts call.
const (
	serviceSageMaker  = "AmazonSageMaker"
	priceFormat       = "aws_v1"
	pricesPerPage     = 100 // the API's maximum
	pricesCachedFor   = 24 * time.Hour
	pricesCacheRegion = "prices\x00"
)

// NewPrices is the Price List client of a data source's region on its shared credentials:
// at awsauth.PricingEndpoint(ep), the only host it signs for.
func NewPrices(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, opts ...Option) (PriceLister, error) {
	return newPrices(creds, ep, seen, optionsOf(opts))
}

func newPrices(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, o options) (*client, error) {
	pep, err := awsauth.PricingEndpoint(ep)
	if err != nil {
		return nil, err
	}
	c, config := newBase(creds, ep, seen, o)
	c.pr = pricing.NewFromConfig(config(pep))
	return c, nil
}

// Prices pages through GetProducts for the region's hosting instances, parsing each page as
// it comes.
func (c *client) Prices(ctx context.Context, region string) ([]prices.Price, error) {
	pages := pricing.NewGetProductsPaginator(c.pr, hostingProducts(region, pricesPerPage))
	var list prices.ListReader
	err := eachPage(ctx, c, ActionGetProducts, pages, func(p *pricing.GetProductsOutput) error {
		if err := list.Add(p.PriceList); err != nil {
			return unreadable(err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return list.Prices(), nil
}

// hostingProducts asks for region's real-time hosting instances, n per page.
func hostingProducts(region string, n int32) *pricing.GetProductsInput {
	var filters []prtypes.Filter
	for _, f := range prices.Filters(region) {
		filters = append(filters, prtypes.Filter{Field: aws.String(f[0]), Value: aws.String(f[1]), Type: prtypes.FilterTypeTermMatch})
	}
	return &pricing.GetProductsInput{ServiceCode: aws.String(serviceSageMaker), Filters: filters, FormatVersion: aws.String(priceFormat), MaxResults: aws.Int32(n)}
}

// unreadable is a Price List answer that came (HTTP 200) but cannot be read as prices.
func unreadable(err error) error {
	return backend.DownstreamError(&Error{Action: ActionGetProducts, Status: http.StatusOK, Message: err.Error(), Err: err})
}

// ProbePrices asks for one product of the region's hosting instances and reads its price:
// an answer that is not a product with an hourly USD price is a broken list, and the cost
// panels would show only gaps from it, so it fails the check.
func (c *client) ProbePrices(ctx context.Context) error {
	out, err := call(ctx, c, ActionGetProducts, func(ctx context.Context) (*pricing.GetProductsOutput, error) {
		return c.pr.GetProducts(ctx, hostingProducts(c.region, 1))
	})
	if err != nil {
		return err
	}
	list, err := prices.ParseProducts(out.PriceList)
	if err == nil && len(list) == 0 {
		err = fmt.Errorf("the list's answer for %s (%d product(s)) has no hosting instance with an hourly USD price", c.region, len(out.PriceList))
	}
	if err != nil {
		return unreadable(err)
	}
	return nil
}

// CachedPrices keeps each region's list prices for a day (AWS publishes them about once a
// month); concurrent calls share one upstream call, errors are not kept. ShareThrough
// shares them with the plugin's other replicas too.
func CachedPrices(p PriceLister, now func() time.Time, opts ...CacheOption) PriceLister {
	return &cachedPrices{p: p, c: newCached(nil, pricesCachedFor, now, opts)}
}

type cachedPrices struct {
	p PriceLister
	c *cached
}

func (c *cachedPrices) Prices(ctx context.Context, region string) ([]prices.Price, error) {
	return get(ctx, c.c, pricesCacheRegion+region, wirePrices, keepFor[[]prices.Price](c.c.ttl), lenOf[prices.Price], func(ctx context.Context) ([]prices.Price, error) {
		return c.p.Prices(ctx, region)
	})
}

// ShareStats implements Sharing.
func (c *cachedPrices) ShareStats() ShareStats { return c.c.ShareStats() }

// ProbePrices is not cached: Save & test must see the permission as it is now.
func (c *cachedPrices) ProbePrices(ctx context.Context) error { return c.p.ProbePrices(ctx) }

// CloseIdleConnections passes Dispose on to the wrapped client.
func (c *cachedPrices) CloseIdleConnections() {
	if cl, ok := c.p.(interface{ CloseIdleConnections() }); ok {
		cl.CloseIdleConnections()
	}
}
