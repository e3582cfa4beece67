package plugin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// Shared is what the clients of every region of one data source share.
type Shared struct {
	// Creds is the data source's credentials provider, built once (its cache and any
	// assumed role serve every region).
	Creds aws.CredentialsProvider
	// Seen learns every credential signed with, for redaction.
	Seen awsauth.SecretSink
	// Transport makes a client's innermost transport (each client its own, so Dispose
	// closes its idle connections): HTTPS_PROXY and the rest of the environment's proxy
	// settings, and the secure socks proxy when Grafana gives the data source one. nil
	// means a clone of http.DefaultTransport.
	Transport func() (*http.Transport, error)
}

// transport is sh.Transport's, or a clone of http.DefaultTransport (which reads HTTPS_PROXY).
func (sh Shared) transport() (*http.Transport, error) {
	if sh.Transport == nil {
		return http.DefaultTransport.(*http.Transport).Clone(), nil
	}
	return sh.Transport()
}

// regional is one region's handle: its own endpoint, PromQL client (with its own limiter,
// as CloudWatch's limits are per region), AWS API client, prices and cache id, and what of
// the settings its queries read. Built by regionFactory, once per region and data source,
// on first use; it points nowhere back, so a query type's code in one region sees only it.
type regional struct {
	region   string
	endpoint awsauth.Endpoint
	client   Upstream
	// aws reads alarms and the inventory; nil with awsErr when it could not be built.
	aws    awsapi.API
	awsErr error
	// prices reads the region's list prices; nil with pricesErr when it could not be built.
	prices    awsapi.PriceLister
	pricesErr error
	// cacheID keys the region's answers in the results cache: never one region's answer
	// for another.
	cacheID string
	// cache is the data source's results cache, shared by its regions; nil when off.
	cache *rcache.Cache
	// sampleInterval is the period CloudWatch publishes at (jsonData.timeInterval).
	sampleInterval time.Duration
	// priceTable is the settings' price table, over the region's list prices.
	priceTable []pricing.Price
}

// regionFactory builds region handles: the one place a region's clients come from. Its
// seams (PromQL client, AWS API, prices) are where tests put their fakes.
type regionFactory struct {
	settings *models.Settings
	shared   Shared
	uid      string        // keys the results cache, so data sources never share answers
	cache    *rcache.Cache // nil when jsonData.cacheSizeMiB is 0
	client   ClientFactory
	aws      AWSFactory
	prices   PricesFactory
}

// regionSlot builds a region's clients once, whoever asks first.
type regionSlot struct {
	once sync.Once
	rg   *regional
	err  error
}

// regional is the clients of region ("" = the default region). A region the data source
// does not allow is refused (downstream) before anything is built or sent.
func (d *Datasource) regional(ctx context.Context, region string) (*regional, error) {
	if d.setupErr != nil {
		return nil, d.setupErr
	}
	if region == "" || region == d.home.region {
		return d.home, nil
	}
	if !slices.Contains(d.allowed, region) {
		if _, err := models.ParseRegions("", region, d.settings); err != nil {
			return nil, err
		}
		return nil, backend.DownstreamError(fmt.Errorf("region %q names several regions where one is expected: pass one region name", region))
	}
	d.regionsMu.Lock()
	slot := d.regions[region]
	if slot == nil {
		slot = &regionSlot{}
		d.regions[region] = slot
	}
	d.regionsMu.Unlock()
	slot.once.Do(func() {
		defer panics.Recover(func(p *panics.Error) {
			logError("building a region's clients panicked", "region", region, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
			d.regionsMu.Lock()
			slot.rg, slot.err = nil, p
			d.regionsMu.Unlock()
		})
		// Built for every later caller too: the first caller's cancellation must not stick.
		rg, err := d.build.build(context.WithoutCancel(ctx), region)
		d.regionsMu.Lock() // closeRegions reads built slots under the lock
		slot.rg, slot.err = rg, err
		d.regionsMu.Unlock()
	})
	return slot.rg, slot.err
}

// regionsOf reads a query's region field (refID names the query in errors): the regions
// to send to, in order, or a downstream error naming the bad item and the fix. "" is the
// default region alone.
func (d *Datasource) regionsOf(refID, field string) ([]string, error) {
	if d.setupErr != nil {
		return nil, d.setupErr
	}
	return models.ParseRegions(refID, field, d.settings)
}

// build makes a region's handle: its endpoint by the settings' rules, the PromQL client,
// the AWS API client (its failure kept in awsErr; PromQL works without it) and the price
// list (likewise).
func (f *regionFactory) build(ctx context.Context, region string) (*regional, error) {
	ep, err := awsauth.ResolveRegionEndpoint(f.settings.Auth, region)
	if err != nil {
		return nil, err
	}
	client, err := f.client(ctx, f.settings, ep, f.shared)
	if err != nil {
		return nil, err
	}
	// The default region is suffixed too: rcache joins id and expression with NUL, which an
	// expression may contain, so a bare uid would let "us-west-2\x00up" reach us-west-2's "up".
	rg := &regional{region: ep.Region, endpoint: ep, client: client, cacheID: f.uid + "\x00" + ep.Region,
		cache: f.cache, sampleInterval: f.settings.TimeInterval, priceTable: f.settings.PriceTable}
	if rg.aws, err = f.aws(ctx, f.settings, ep, f.shared); err != nil {
		rg.aws, rg.awsErr = nil, err
	}
	if rg.prices, err = f.prices(f.settings, ep, f.shared); err != nil {
		rg.prices, rg.pricesErr = nil, err
	}
	return rg, nil
}

// checkEndpoints resolves the endpoint of every region queries may name, the default
// region's first. Each is a few string checks; doing them all here lets Save & test report
// a bad jsonData.endpoint that regionEndpoints hides from the default region but every
// other region would use.
func checkEndpoints(s *models.Settings) error {
	for _, region := range append([]string{""}, s.Allowed()...) {
		if _, err := awsauth.ResolveRegionEndpoint(s.Auth, region); err != nil {
			return err
		}
	}
	return nil
}

// closeRegions releases the idle connections of every region built.
func (d *Datasource) closeRegions() {
	d.regionsMu.Lock()
	built := []*regional{d.home}
	for _, s := range d.regions {
		built = append(built, s.rg)
	}
	d.regionsMu.Unlock()
	for _, rg := range built {
		if rg == nil {
			continue
		}
		for _, c := range []any{rg.client, rg.aws, rg.prices} {
			if c, ok := c.(interface{ CloseIdleConnections() }); ok {
				c.CloseIdleConnections()
			}
		}
	}
}

// regionParam is the region a resource call names in its region parameter (absent: the
// default region; several: the first), validated as a query's field is; bad is the 400
// answer that refuses it before anything is sent.
func (d *Datasource) regionParam(ctx context.Context, values url.Values) (rg *regional, bad *backend.CallResourceResponse) {
	regions, err := models.ParseRegions("", values.Get("region"), d.settings)
	if err == nil {
		rg, err = d.regional(ctx, regions[0])
	}
	if err != nil {
		return nil, problemJSON(refused(err), "parameter region: ")
	}
	return rg, nil
}
