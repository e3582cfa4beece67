package plugin

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

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
	// changes reads the fleet's changes (CloudTrail); nil with changesErr when it could not
	// be built.
	changes    awsapi.ChangeLister
	changesErr error
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
		for _, c := range []any{rg.client, rg.aws, rg.prices, rg.changes} {
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
