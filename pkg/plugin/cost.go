package plugin

import (
	"fmt"
	"regexp"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
)

// defaultSampleInterval is how often CloudWatch metrics are assumed to be sampled when the
// data source sets no scrape interval (timeInterval).
const defaultSampleInterval = time.Minute

// rangeSelector finds range-vector windows such as [5m] or subqueries [1h:1m].
var rangeSelector = regexp.MustCompile(`\[\s*([0-9][0-9a-z]*)\s*(?::[^\]]*)?\]`)

// samplesPerPoint estimates how many stored samples one output point reads: the widest
// range window over the sample interval, else one (the latest sample).
func samplesPerPoint(expr string, sampleInterval time.Duration) int64 {
	widest := time.Duration(0)
	for _, m := range rangeSelector.FindAllStringSubmatch(expr, -1) {
		if d, err := models.ParseDuration(m[1]); err == nil {
			widest = max(widest, d)
		}
	}
	return max(1, int64(widest/sampleInterval))
}

// sampleInterval is the data source's timeInterval, else defaultSampleInterval.
func (d *Datasource) sampleInterval() time.Duration {
	if d.settings != nil && d.settings.TimeInterval > 0 {
		return d.settings.TimeInterval
	}
	return defaultSampleInterval
}

// annotateCost adds the query's estimated samples scanned and their cost at the
// configured price to the first frame's stats (the query inspector shows them). Points
// are what was fetched upstream: the frames' own points when the whole answer came from
// upstream (fromFrames), else the cache's count. CloudWatch's answers carry no scan
// statistics, so this is an estimate: points × samples each point reads.
func (d *Datasource) annotateCost(frames data.Frames, expr string, r rcache.Result, fromFrames bool) {
	if len(frames) == 0 {
		return
	}
	points := r.Points
	if fromFrames {
		points = 0
		for _, f := range frames {
			if n, err := f.RowLen(); err == nil {
				points += int64(n) * int64(max(len(f.Fields)-1, 0))
			}
		}
	}
	samples := points * samplesPerPoint(expr, d.sampleInterval())
	price := 0.0
	if d.settings != nil {
		price = d.settings.CostPerMillionSamples
	}
	f := frames[0]
	if f.Meta == nil {
		f.Meta = &data.FrameMeta{}
	}
	f.Meta.Stats = append(f.Meta.Stats,
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: "Samples scanned (estimate)"}, Value: float64(samples)},
		data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: fmt.Sprintf("Estimated cost (USD at $%g per 1M samples, jsonData.costPerMillionSamples)", price), Unit: "currencyUSD"}, Value: float64(samples) / 1e6 * price},
	)
}
