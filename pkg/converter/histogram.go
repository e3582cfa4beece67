package converter

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/data/utils/jsoniter"
)

// Native histograms become heatmap-cells frames: one row per bucket per sample, with the
// bucket's bounds (yMin, yMax), its count and Prometheus' boundary rule (yLayout: 0 open
// left, 1 open right, 2 open both, 3 closed both). This is the shape Grafana's heatmap
// panel draws directly, and it keeps exponential buckets exact instead of forcing them
// onto classic "le" boundaries. A histogram's overall count and sum are recoverable from
// the buckets and from histogram_count()/histogram_sum() queries, so they are not
// repeated on every row.
const frameTypeHeatmapCells data.FrameType = "heatmap-cells"

// readHistogramSample reads [<unix seconds>, {"count":..., "sum":..., "buckets":[...]}].
func (d *decoder) readHistogramSample(iter *jsoniter.Iterator) error {
	if err := d.countPoint(); err != nil {
		return err
	}
	t, err := openSample(iter)
	if err != nil {
		return err
	}
	next, err := iter.WhatIsNext()
	if err != nil {
		return err
	}
	if next != jsoniter.ObjectValue {
		return formatErrorf("a histogram sample's value is not an object with count, sum and buckets")
	}
	d.buckets = d.buckets[:0]
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return err
		}
		if key == "" {
			break
		}
		if key != "buckets" {
			if err := iter.Skip(); err != nil {
				return err
			}
			continue
		}
		if err := d.readBuckets(iter); err != nil {
			return err
		}
	}
	d.hists = append(d.hists, Histogram{T: t, Buckets: exact(d.buckets)})
	return closeSample(iter)
}

// readBuckets reads [[<boundary rule>, "<lower>", "<upper>", "<count>"], ...].
func (d *decoder) readBuckets(iter *jsoniter.Iterator) error {
	next, err := iter.WhatIsNext()
	if err != nil {
		return err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return err
	}
	for {
		more, err := iter.ReadArray()
		if err != nil || !more {
			return err
		}
		if more, err := iter.ReadArray(); err != nil || !more {
			return bucketShapeError(err)
		}
		rule, err := iter.ReadInt()
		if err != nil {
			return err
		}
		if rule < 0 || rule > 3 {
			return formatErrorf("histogram bucket boundary rule %d is not 0-3", rule)
		}
		var nums [3]float64
		for i := range nums {
			if more, err := iter.ReadArray(); err != nil || !more {
				return bucketShapeError(err)
			}
			raw, err := iter.ReadStringAsSlice()
			if err != nil {
				return err
			}
			if nums[i], err = parseValue(raw); err != nil {
				return err
			}
		}
		if err := closeSample(iter); err != nil {
			return err
		}
		d.buckets = append(d.buckets, Bucket{Lower: nums[0], Upper: nums[1], Count: nums[2], Rule: int8(rule)})
	}
}

func bucketShapeError(err error) error {
	if err != nil {
		return err
	}
	return formatErrorf("a histogram bucket is not a [boundary rule, lower, upper, count] array")
}

// addHistogramSeries adds a heatmap-cells frame: one row per bucket per sample.
func (b *builder) addHistogramSeries(labels data.Labels, hists []Histogram) {
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
