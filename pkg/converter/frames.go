package converter

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/interval"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Custom is every frame's Meta.Custom. The first frame also carries the calculated step,
// which Grafana's frontend needs for its incremental query cache.
type Custom struct {
	ResultType        string `json:"resultType"`
	CalculatedMinStep int64  `json:"calculatedMinStep,omitempty"`
}

// builder accumulates frames while the response is read. The sample slices are scratch
// space reused for every series: each series is copied once into exactly sized field
// vectors, so a long matrix costs no repeated slice growth.
type builder struct {
	opts       Options
	resultType string
	sawResult  bool
	series     int
	points     int // samples read so far, against opts.MaxPoints
	frames     data.Frames

	times  []time.Time
	values []float64
	hist   histRows
}

func newBuilder(opts Options) *builder {
	return &builder{opts: opts}
}

func (b *builder) frameType() (data.FrameType, data.FrameTypeVersion) {
	switch b.resultType {
	case "matrix":
		return data.FrameTypeTimeSeriesMulti, data.FrameTypeVersion{0, 1}
	case "vector", "scalar":
		return data.FrameTypeNumericMulti, data.FrameTypeVersion{0, 1}
	}
	return data.FrameTypeUnknown, data.FrameTypeVersion{}
}

func (b *builder) meta() *data.FrameMeta {
	typ, version := b.frameType()
	return &data.FrameMeta{Type: typ, TypeVersion: version, Custom: Custom{ResultType: b.resultType}}
}

// timeField builds a frame's time field; its interval tells Grafana the expected spacing
// between points (used to break lines at gaps).
func (b *builder) timeField(name string, values []time.Time) *data.Field {
	f := data.NewField(name, nil, values)
	if b.opts.Step > 0 {
		f.Config = &data.FieldConfig{Interval: float64(b.opts.Step.Milliseconds())}
	}
	return f
}

// addFloatSeries turns the scratch samples into a Time + Value frame. The value field is
// named after the metric when the series has one, and carries the series' labels.
func (b *builder) addFloatSeries(labels data.Labels) {
	name := data.TimeSeriesValueFieldName
	if n, ok := labels["__name__"]; ok && n != "" {
		name = n
	}
	valueField := data.NewField(name, labels, b.values)
	frame := data.NewFrame("", b.timeField(data.TimeSeriesTimeFieldName, b.times), valueField)
	frame.Meta = b.meta()
	b.legendField(valueField, labels)
	b.frames = append(b.frames, frame)
}

func (b *builder) addStringResult(ts time.Time, s string) {
	frame := data.NewFrame("",
		b.timeField(data.TimeSeriesTimeFieldName, []time.Time{ts}),
		data.NewField(data.TimeSeriesValueFieldName, nil, []string{s}),
	)
	frame.Meta = b.meta()
	b.frames = append(b.frames, frame)
}

func (b *builder) legendField(f *data.Field, labels data.Labels) {
	name := displayName(b.opts.LegendFormat, b.opts.Expr, labels)
	if name == "" {
		return
	}
	if f.Config == nil {
		f.Config = &data.FieldConfig{}
	}
	f.Config.DisplayNameFromDS = name
}

// finish adds what belongs to the response as a whole to the first frame: the executed
// query, the step, warnings, infos and the truncation notice. An empty result still
// yields one frame so this metadata reaches the panel.
func (b *builder) finish(env promclient.Envelope) data.Frames {
	if len(b.frames) == 0 {
		frame := data.NewFrame("")
		frame.Meta = b.meta()
		b.frames = append(b.frames, frame)
	}
	meta := b.frames[0].Meta
	meta.ExecutedQueryString = "Expr: " + b.opts.Expr + "\nStep: " + interval.FormatDuration(b.opts.Step)
	meta.Custom = Custom{ResultType: b.resultType, CalculatedMinStep: b.opts.Step.Milliseconds()}
	truncated := false
	for _, w := range env.Warnings {
		meta.Notices = append(meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: w})
		if strings.Contains(strings.ToLower(w), "truncated") {
			truncated = true
		}
	}
	for _, i := range env.Infos {
		meta.Notices = append(meta.Notices, data.Notice{Severity: data.NoticeSeverityInfo, Text: i})
	}
	if truncated || b.series >= promclient.MaxQueryLimit {
		meta.Notices = append(meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: truncationText})
	}
	return b.frames
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

// parseValue reads a sample value as Prometheus writes it: a decimal string, or NaN,
// +Inf, -Inf.
func parseValue(raw []byte) (float64, error) {
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		s := string(raw)
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return 0, formatErrorf("sample value %q is not a number", s)
	}
	return v, nil
}
