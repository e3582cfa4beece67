package converter

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Native histograms become heatmap-cells frames: one row per bucket per sample, with the
// bucket's bounds (yMin, yMax), its count and Prometheus' boundary rule (yLayout: 0 open
// left, 1 open right, 2 open both, 3 closed both). This is the shape Grafana's heatmap
// panel draws directly, and it keeps exponential buckets exact instead of forcing them
// onto classic "le" boundaries. A histogram's overall count and sum are recoverable from
// the buckets and from histogram_count()/histogram_sum() queries, so they are not
// repeated on every row.
const frameTypeHeatmapCells data.FrameType = "heatmap-cells"

// addHistogramSeries adds a heatmap-cells frame: one row per bucket per sample.
func (b *builder) addHistogramSeries(labels data.Labels, hists []promclient.Histogram) {
	var xMax []int64
	var yMin, yMax, count []float64
	var yLayout []int8
	for _, h := range hists {
		for _, bk := range h.Buckets {
			xMax = append(xMax, h.T)
			yMin, yMax, count = append(yMin, bk.Lower), append(yMax, bk.Upper), append(count, bk.Count)
			yLayout = append(yLayout, bk.Rule)
		}
	}
	countField := data.NewField("count", labels, count)
	frame := data.NewFrame("",
		b.timeField("xMax", xMax),
		data.NewField("yMin", nil, yMin),
		data.NewField("yMax", nil, yMax),
		countField,
		data.NewField("yLayout", nil, yLayout),
	)
	frame.Meta = b.meta()
	frame.Meta.Type, frame.Meta.TypeVersion = frameTypeHeatmapCells, data.FrameTypeVersion{}
	b.legendField(countField, labels)
	b.frames = append(b.frames, frame)
}
