package plugin

import (
	"math"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// cell is one value of a cost table's row: a string, or a number (nil = missing).
type cell struct {
	name string
	s    *string
	f    *float64
	unit string
}

func str(name, v string) cell { return cell{name: name, s: &v} }

// num is a number; NaN is missing.
func num(name string, v float64) cell {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return cell{name: name, f: nil, unit: "none"}
	}
	return cell{name: name, f: &v, unit: "none"}
}

// usd is an amount of US dollars, missing when its price is (gap) or it is NaN.
func usd(name string, v float64, gap error) cell {
	c := num(name, v)
	if gap != nil {
		c.f = nil
	}
	c.unit = "currencyUSD"
	return c
}

// table collects a cost view's rows into one frame: columns in the order of the first row,
// a region column first when asked for, and a warning notice per missing price.
type table struct {
	withRegion bool
	cols       []cell // names, kinds and units
	strs       map[string][]string
	nums       map[string][]*float64
	gaps       []string
}

func newTable(withRegion bool) *table {
	return &table{withRegion: withRegion, strs: map[string][]string{}, nums: map[string][]*float64{}}
}

func (t *table) row(region string, gap error, cells ...cell) {
	if t.withRegion {
		cells = append([]cell{str("Region", region)}, cells...)
	}
	if gap != nil && !slices.Contains(t.gaps, gap.Error()) {
		t.gaps = append(t.gaps, gap.Error())
	}
	for _, c := range cells {
		if !slices.ContainsFunc(t.cols, func(o cell) bool { return o.name == c.name }) {
			t.cols = append(t.cols, c)
		}
		if c.s != nil {
			t.strs[c.name] = append(t.strs[c.name], *c.s)
		} else {
			t.nums[c.name] = append(t.nums[c.name], c.f)
		}
	}
}

func (t *table) frame() *data.Frame {
	fr := data.NewFrame("cost")
	for _, c := range t.cols {
		if c.s != nil {
			fr.Fields = append(fr.Fields, data.NewField(c.name, nil, t.strs[c.name]))
			continue
		}
		f := data.NewField(c.name, nil, t.nums[c.name])
		f.Config = &data.FieldConfig{Unit: c.unit}
		fr.Fields = append(fr.Fields, f)
	}
	fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	for _, g := range t.gaps {
		fr.Meta.Notices = append(fr.Meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: g})
	}
	return fr
}
