package converter

import (
	"time"

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

// histRows is the scratch space for one series' histogram rows, reused across series.
type histRows struct {
	xMax         []time.Time
	yMin, yMax   []float64
	count        []float64
	yLayout      []int8
	samplesTotal int
}

func (h *histRows) reset() {
	h.xMax, h.yMin, h.yMax, h.count, h.yLayout = h.xMax[:0], h.yMin[:0], h.yMax[:0], h.count[:0], h.yLayout[:0]
	h.samplesTotal = 0
}

// len is the number of histogram samples read, including those without buckets.
func (h *histRows) len() int { return h.samplesTotal }

// readHistogramSample reads [<unix seconds>, {"count":..., "sum":..., "buckets":[...]}].
func (b *builder) readHistogramSample(iter *jsoniter.Iterator) error {
	if err := b.countPoint(); err != nil {
		return err
	}
	ts, err := openSample(iter)
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
	b.hist.samplesTotal++
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
		if err := b.readBuckets(iter, ts); err != nil {
			return err
		}
	}
	return closeSample(iter)
}

// readBuckets reads [[<boundary rule>, "<lower>", "<upper>", "<count>"], ...].
func (b *builder) readBuckets(iter *jsoniter.Iterator, ts time.Time) error {
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
		h := &b.hist
		h.xMax = append(h.xMax, ts)
		h.yMin = append(h.yMin, nums[0])
		h.yMax = append(h.yMax, nums[1])
		h.count = append(h.count, nums[2])
		h.yLayout = append(h.yLayout, int8(rule))
	}
}

func bucketShapeError(err error) error {
	if err != nil {
		return err
	}
	return formatErrorf("a histogram bucket is not a [boundary rule, lower, upper, count] array")
}

func (b *builder) addHistogramSeries(labels data.Labels) {
	h := &b.hist
	countField := data.NewField("count", labels, h.count)
	frame := data.NewFrame("",
		b.timeField("xMax", h.xMax),
		data.NewField("yMin", nil, h.yMin),
		data.NewField("yMax", nil, h.yMax),
		countField,
		data.NewField("yLayout", nil, h.yLayout),
	)
	frame.Meta = b.meta()
	frame.Meta.Type, frame.Meta.TypeVersion = frameTypeHeatmapCells, data.FrameTypeVersion{}
	b.legendField(countField, labels)
	b.frames = append(b.frames, frame)
}
