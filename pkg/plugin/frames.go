package plugin

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// frameCustom is every frame's Meta.Custom. The first frame also carries the calculated step,
// which Grafana's frontend needs for its incremental query cache.
type frameCustom struct {
	ResultType        string `json:"resultType"`
	CalculatedMinStep int64  `json:"calculatedMinStep,omitempty"`
}

// frameOptions carries the query context the frames describe.
type frameOptions struct {
	// Expr is the expression as executed (variables expanded). It is shown in the query
	// inspector and stands in for the legend of a series without labels.
	Expr string
	// LegendFormat is the panel's legend: "{{label}}" templates, "__auto" or "".
	LegendFormat string
	// Step is the query step (the range step, or the calculated step of an instant query).
	Step time.Duration
	// MaxPoints caps the samples of all frames; 0 means promclient.DefaultMaxPoints.
	MaxPoints int
	// AddLabels are set on every series (and scalar) that lacks them, before the legend
	// is formatted, so {{label}} and __auto legends show them (e.g. the region an answer
	// came from when a query spans regions).
	AddLabels data.Labels
	// Start and End are the range asked for (step-aligned); an instant query has only End,
	// its evaluation time. The query inspector shows them beside the expression.
	Start, End time.Time
}

// executedQuery is the query inspector's text for a query: the expression as sent (variables
// expanded), its step and the range or, for an instant query, the time it was asked at.
func executedQuery(opts frameOptions) string {
	s := "Expr: " + opts.Expr + "\nStep: " + models.FormatDuration(opts.Step)
	switch {
	case !opts.Start.IsZero():
		s += "\nRange: " + opts.Start.UTC().Format(time.RFC3339) + " to " + opts.End.UTC().Format(time.RFC3339)
	case !opts.End.IsZero():
		s += "\nTime: " + opts.End.UTC().Format(time.RFC3339)
	}
	return s
}

// framesOf builds the answer's frames: one per float series and one per histogram series,
// in the answer's order. It does not change the answer (a cached one is shared) and the
// frames share none of its memory. Consecutive frames whose samples have the same times
// share one time field (a time.Time is 24 bytes a point, three times its value): the
// frames are read only. A *TooLargeError past opts.MaxPoints samples.
func framesOf(a *promclient.Answer, opts frameOptions) (data.Frames, error) {
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = promclient.DefaultMaxPoints
	}
	if a.Points() > opts.MaxPoints {
		return nil, &promclient.TooLargeError{Limit: int64(opts.MaxPoints), Unit: "points"}
	}
	b := &frameBuilder{opts: opts, resultType: a.Type}
	for _, s := range a.Series {
		labels := b.withAdded(s.Labels)
		switch {
		case a.Type == "string":
			b.addStringResult(s.T, a.Text)
			continue
		case len(s.V) > 0 || len(s.Histograms) == 0:
			b.addFloatSeries(labels, s)
		}
		if len(s.Histograms) > 0 {
			b.addHistogramSeries(labels, s.Histograms)
		}
	}
	return b.finish(a), nil
}

// frameBuilder accumulates one Answer's frames. times is scratch space for the time fields,
// reused for every series (data.NewField copies it); last is the last time field built,
// from lastMs.
type frameBuilder struct {
	opts       frameOptions
	resultType string
	frames     data.Frames
	times      []time.Time
	last       *data.Field
	lastMs     []int64
}

func (b *frameBuilder) frameType() (data.FrameType, data.FrameTypeVersion) {
	switch b.resultType {
	case "matrix":
		return data.FrameTypeTimeSeriesMulti, data.FrameTypeVersion{0, 1}
	case "vector", "scalar":
		return data.FrameTypeNumericMulti, data.FrameTypeVersion{0, 1}
	}
	return data.FrameTypeUnknown, data.FrameTypeVersion{}
}

func (b *frameBuilder) meta() *data.FrameMeta {
	typ, version := b.frameType()
	return &data.FrameMeta{Type: typ, TypeVersion: version, Custom: frameCustom{ResultType: b.resultType}}
}

// timeField builds a frame's time field from times in ms, or gives the last one again for
// the same times; its interval tells Grafana the expected spacing between points (used to
// break lines at gaps).
func (b *frameBuilder) timeField(name string, ms []int64) *data.Field {
	if b.last != nil && b.last.Name == name && slices.Equal(b.lastMs, ms) {
		return b.last
	}
	b.times = b.times[:0]
	for _, t := range ms {
		b.times = append(b.times, millisToTime(t))
	}
	f := data.NewField(name, nil, b.times)
	if b.opts.Step > 0 {
		f.Config = &data.FieldConfig{Interval: float64(b.opts.Step.Milliseconds())}
	}
	b.last, b.lastMs = f, ms
	return f
}

// withAdded is a copy of labels with the AddLabels it lacks (nil stays nil when nothing
// is added), so no frame shares a map with the answer.
func (b *frameBuilder) withAdded(labels data.Labels) data.Labels {
	var out data.Labels
	if labels != nil {
		out = make(data.Labels, len(labels)+len(b.opts.AddLabels))
		for k, v := range labels {
			out[k] = v
		}
	}
	for k, v := range b.opts.AddLabels {
		if _, ok := out[k]; ok {
			continue
		}
		if out == nil {
			out = data.Labels{}
		}
		out[k] = v
	}
	return out
}

// addFloatSeries adds a Time + Value frame. The value field is named after the metric
// when the series has one, and carries the series' labels.
func (b *frameBuilder) addFloatSeries(labels data.Labels, s promclient.Series) {
	name := data.TimeSeriesValueFieldName
	if n, ok := labels["__name__"]; ok && n != "" {
		name = n
	}
	valueField := data.NewField(name, labels, s.V)
	frame := data.NewFrame("", b.timeField(data.TimeSeriesTimeFieldName, s.T), valueField)
	frame.Meta = b.meta()
	b.legendField(valueField, labels)
	b.frames = append(b.frames, frame)
}

func (b *frameBuilder) addStringResult(t []int64, s string) {
	frame := data.NewFrame("",
		b.timeField(data.TimeSeriesTimeFieldName, t),
		data.NewField(data.TimeSeriesValueFieldName, nil, []string{s}),
	)
	frame.Meta = b.meta()
	b.frames = append(b.frames, frame)
}

func (b *frameBuilder) legendField(f *data.Field, labels data.Labels) {
	name := displayName(b.opts.LegendFormat, b.opts.Expr, labels)
	if name == "" {
		return
	}
	if f.Config == nil {
		f.Config = &data.FieldConfig{}
	}
	f.Config.DisplayNameFromDS = name
}

// finish adds what belongs to the answer as a whole to the first frame: the executed
// query, the step, warnings, infos and the truncation notice. An empty result still
// yields one frame so this metadata reaches the panel.
func (b *frameBuilder) finish(a *promclient.Answer) data.Frames {
	if len(b.frames) == 0 {
		frame := data.NewFrame("")
		frame.Meta = b.meta()
		b.frames = append(b.frames, frame)
	}
	meta := b.frames[0].Meta
	meta.ExecutedQueryString = executedQuery(b.opts)
	meta.Custom = frameCustom{ResultType: b.resultType, CalculatedMinStep: b.opts.Step.Milliseconds()}
	for _, w := range a.Warnings {
		meta.Notices = append(meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: w})
	}
	for _, i := range a.Infos {
		meta.Notices = append(meta.Notices, data.Notice{Severity: data.NoticeSeverityInfo, Text: i})
	}
	if cutWarning(a) || (a.Type == "matrix" || a.Type == "vector") && len(a.Series) >= promclient.MaxQueryLimit {
		meta.Notices = append(meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: truncationText})
	}
	return b.frames
}

// cutWarning reports whether the upstream warned that it truncated the answer.
func cutWarning(a *promclient.Answer) bool {
	return slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.Contains(strings.ToLower(w), "truncated") })
}

var truncationText = fmt.Sprintf("Result truncated at %d series, the most CloudWatch returns for one query: some series are missing. "+
	"Narrow the selector with more label matchers, or aggregate (for example sum by (label) (...)) so that fewer series come back.", promclient.MaxQueryLimit)

// displayName is the legend Grafana shows for a series:
//
//	"__auto"     Grafana's own naming (unset), or the expression for a series without labels
//	""           name{label="value", ...} with labels sorted, or the expression when that is {}
//	a template   {{label}} replaced by the label's value; names may hold dots and @
func displayName(legend, expr string, labels data.Labels) string {
	switch legend {
	case "__auto":
		if len(labels) == 0 {
			return expr
		}
		return ""
	case "":
		if s := seriesName(labels); s != "{}" {
			return s
		}
		return expr
	}
	return expandLegend(legend, labels)
}

// seriesName renders labels the way Prometheus prints a series.
func seriesName(labels data.Labels) string {
	name := labels["__name__"]
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 && name != "" {
		return name
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString(name)
	sb.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(strconv.Quote(labels[k]))
	}
	sb.WriteByte('}')
	return sb.String()
}

// expandLegend replaces each {{ name }} with the label's value ("" when absent). The name
// is everything between the braces, trimmed, so OTel names such as
// aws.sagemaker.endpoint.name or @resource.host.id work as typed.
func expandLegend(legend string, labels data.Labels) string {
	var sb strings.Builder
	rest := legend
	for {
		open := strings.Index(rest, "{{")
		if open < 0 {
			break
		}
		end := strings.Index(rest[open+2:], "}}")
		if end < 0 {
			break
		}
		sb.WriteString(rest[:open])
		sb.WriteString(labels[strings.TrimSpace(rest[open+2:open+2+end])])
		rest = rest[open+2+end+2:]
	}
	sb.WriteString(rest)
	return sb.String()
}

// millisToTime is a sample time as the frames hold it.
func millisToTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Native histograms become heatmap-cells frames: one row per bucket per sample, with the
// bucket's bounds (yMin, yMax), its count and Prometheus' boundary rule (yLayout: 0 open
// left, 1 open right, 2 open both, 3 closed both). This is the shape Grafana's heatmap
// panel draws directly, and it keeps exponential buckets exact instead of forcing them
// onto classic "le" boundaries. A histogram's overall count and sum are recoverable from
// the buckets and from histogram_count()/histogram_sum() queries, so they are not
// repeated on every row.
const frameTypeHeatmapCells data.FrameType = "heatmap-cells"

// addHistogramSeries adds a heatmap-cells frame: one row per bucket per sample.
func (b *frameBuilder) addHistogramSeries(labels data.Labels, hists []promclient.Histogram) {
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
