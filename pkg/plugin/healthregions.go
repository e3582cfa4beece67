package plugin

import "context"

// regionsAtOnce bounds how many regions one health query or inventory lookup reads at once
// (each region's calls are bounded again by pkg/awsapi).
const regionsAtOnce = 4

// inRegions runs fn on each region's clients, at most regionsAtOnce regions at a time,
// panic-safe. It returns each region's clients (nil when they could not be built) and its
// failure: the clients could not be built, or fn failed.
func (d *Datasource) inRegions(ctx context.Context, what string, regions []string, fn func(ctx context.Context, i int, rg *regional) error) ([]*regional, []error) {
	rgs := make([]*regional, len(regions))
	calls := make([]func() error, len(regions))
	for i, region := range regions {
		calls[i] = func() error {
			rg, err := d.regional(ctx, region)
			if err != nil {
				return err
			}
			rgs[i] = rg
			return fn(ctx, i, rg)
		}
	}
	return rgs, parallelN(what, regionsAtOnce, calls...)
}

// eachRegion is inRegions for the alarms and inventory queries: a region without an
// alarms and inventory client fails with the reason it has none.
func (d *Datasource) eachRegion(ctx context.Context, what string, regions []string, fn func(ctx context.Context, i int, rg *regional) error) ([]*regional, []error) {
	return d.inRegions(ctx, what, regions, func(ctx context.Context, i int, rg *regional) error {
		if rg.aws == nil {
			return rg.awsErr
		}
		return fn(ctx, i, rg)
	})
}
