package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// read converts an answer into frames as the plugin does: promclient.ReadAnswer, then Frames.
func readFrames(r io.Reader, opts frameOptions) (data.Frames, error) {
	a, err := promclient.ReadAnswer(r, opts.MaxPoints)
	if err != nil {
		return nil, err
	}
	return framesOf(a, opts)
}

// response is how the plugin reports a conversion: frames, or the error as a downstream
// error (the body came from upstream).
func framesResponse(r io.Reader, opts frameOptions) backend.DataResponse {
	frames, err := readFrames(r, opts)
	if err != nil {
		return backend.DataResponse{Error: err, ErrorSource: backend.ErrorSourceDownstream}
	}
	return backend.DataResponse{Frames: frames}
}

var goldenCases = []struct {
	file string
	opts frameOptions
}{
	{"matrix.json", frameOptions{Expr: "vllm:num_requests_running", LegendFormat: "{{aws.sagemaker.endpoint.name}} on {{ @resource.host.id }}{{missing}}", Step: 15 * time.Second}},
	{"matrix-result-first.json", frameOptions{Expr: "sum by (ep) (x)", LegendFormat: "__auto", Step: time.Minute}},
	{"vector.json", frameOptions{Expr: "up or vector(42)", Step: 30 * time.Second}},
	{"scalar.json", frameOptions{Expr: "1+1", Step: 15 * time.Second}},
	{"string.json", frameOptions{Expr: `"hello"`}},
	{"histogram-vector.json", frameOptions{Expr: "vllm:time_to_first_token_seconds", LegendFormat: "{{aws.sagemaker.endpoint.name}}", Step: time.Minute}},
	{"histogram-matrix.json", frameOptions{Expr: "sum_over_time(h[5m])", Step: time.Minute}},
	{"empty-matrix.json", frameOptions{Expr: "absent_metric", Step: 1500 * time.Millisecond}},
	{"empty-vector-infos.json", frameOptions{Expr: "min(h)", Step: 15 * time.Second}},
	{"truncated-warning.json", frameOptions{Expr: "m", LegendFormat: "{{a}}", Step: 15 * time.Second}},
	{"error-bad-data.json", frameOptions{Expr: "sum("}},
	{"error-execution-with-data.json", frameOptions{Expr: "x"}},
	{"error-aws.json", frameOptions{Expr: "x"}},
	{"error-not-json.txt", frameOptions{Expr: "x"}},
	{"error-bad-value.json", frameOptions{Expr: "x"}},
	{"error-result-type.json", frameOptions{Expr: "x"}},
	{"error-no-result-type.json", frameOptions{Expr: "x"}},
	{"error-truncated-body.json", frameOptions{Expr: "up"}},
}

// TestGolden converts every testdata response and compares the DataResponse with its
// golden file. Run with -update to rewrite them after an intended change.
func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			dr := framesResponse(bytes.NewReader(body), tc.opts)
			name := strings.TrimSuffix(tc.file, filepath.Ext(tc.file)) + ".golden"
			goldentest.CheckDataResponse(t, "testdata", name, &dr, *update)

			// Reading through a one-byte reader exercises every buffer boundary of the
			// streaming parser; the outcome must not change.
			slow := framesResponse(iotest.OneByteReader(bytes.NewReader(body)), tc.opts)
			want, _ := json.Marshal(dr)
			got, _ := json.Marshal(slow)
			if !bytes.Equal(want, got) {
				t.Fatalf("one-byte reader gives a different response:\n%s\nvs\n%s", got, want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		file     string
		wantProm *promclient.APIError // Type and Message compared; nil: a *MalformedError
		wantText string
	}{
		{"error-bad-data.json", &promclient.APIError{Type: "bad_data", Message: "1:4: parse error: unclosed left parenthesis"}, "bad_data: 1:4: parse error: unclosed left parenthesis"},
		{"error-execution-with-data.json", &promclient.APIError{Type: "execution", Message: "query processing would load too many samples into memory"}, "execution: query processing"},
		{"error-aws.json", &promclient.APIError{Type: "AccessDeniedException", Message: "User is not authorized to perform: cloudwatch:GetMetricData"}, "AccessDeniedException"},
		{"error-not-json.txt", nil, "not a JSON object"},
		{"error-bad-value.json", nil, `sample value "fast" is not a number`},
		{"error-result-type.json", nil, `resultType "streams"`},
		{"error-no-result-type.json", nil, "result but no resultType"},
		{"error-truncated-body.json", nil, "not a valid Prometheus API response"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			frames, err := readFrames(bytes.NewReader(body), frameOptions{})
			if err == nil {
				t.Fatalf("want an error, got %d frames", len(frames))
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not contain %q", err, tc.wantText)
			}
			var pe *promclient.APIError
			if tc.wantProm != nil {
				if !errors.As(err, &pe) || pe.Type != tc.wantProm.Type || pe.Message != tc.wantProm.Message {
					t.Errorf("error = %#v, want %#v", err, tc.wantProm)
				}
			} else if me := new(promclient.MalformedError); !errors.As(err, &me) {
				t.Errorf("a malformed body must be a *MalformedError (retried as a transient fault): %#v", err)
			}
			dr := framesResponse(bytes.NewReader(body), frameOptions{})
			if dr.Error == nil || dr.ErrorSource != backend.ErrorSourceDownstream {
				t.Errorf("response must carry a downstream error, got %v / %q", dr.Error, dr.ErrorSource)
			}
		})
	}
}

func TestMoreErrorShapes(t *testing.T) {
	tests := []struct{ body, want string }{
		{``, "not a valid Prometheus API response"},
		{`[]`, "not a JSON object"},
		{`{"status":"error"}`, "CloudWatch reported an error: (no message)"},
		{`{"status":"error","errorType":"timeout","error":null}`, "CloudWatch reported timeout: (no message)"},
		{`{"status":"success"}`, "status success but no data"},
		{`{"data":{"resultType":"vector","result":[]}}`, "no status field"},
		{`{"status":"pending","data":{}}`, `unknown status "pending"`},
		{`{"status":"success","data":{"resultType":"vector","result":[],"result":[]}}`, "more than one result"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}}`, "not a [timestamp, value] pair"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"value":["1","1"]}]}}`, "not a valid Prometheus API response"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"value":[1e300,"1"]}]}}`, "not a Unix time"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"histogram":[1,5]}]}}`, "count, sum and buckets"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"histogram":[1,{"buckets":[[7,"0","1","1"]]}]}]}}`, "boundary rule 7"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"histogram":[1,{"buckets":[[0,"0"]]}]}]}}`, "[boundary rule, lower, upper, count]"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1}}]}}`, "not a valid Prometheus API response"},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			_, err := readFrames(strings.NewReader(tc.body), frameOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// vectorBody builds an instant-query response with n series.
func vectorBodyOf(n int, warnings ...string) string {
	var sb strings.Builder
	sb.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"metric":{"__name__":"m","i":"%d"},"value":[1764496800,"%d"]}`, i, i)
	}
	sb.WriteString(`]}`)
	if len(warnings) > 0 {
		w, _ := json.Marshal(warnings)
		fmt.Fprintf(&sb, `,"warnings":%s`, w)
	}
	sb.WriteString(`}`)
	return sb.String()
}

func TestTruncationNotice(t *testing.T) {
	tests := []struct {
		name      string
		series    int
		warnings  []string
		wantText  string
		wantTotal int
	}{
		{name: "below the cap", series: 499, wantTotal: 0},
		{name: "at CloudWatch's cap", series: 500, wantText: "Result truncated at 500 series, the most CloudWatch returns", wantTotal: 1},
		{name: "truncation warning from CloudWatch", series: 3, warnings: []string{"result truncated to the maximum of 500 series"}, wantText: "Narrow the selector", wantTotal: 2},
		{name: "other warnings only", series: 3, warnings: []string{"something else"}, wantTotal: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frames, err := readFrames(strings.NewReader(vectorBodyOf(tc.series, tc.warnings...)), frameOptions{Expr: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if len(frames) != tc.series {
				t.Fatalf("%d frames for %d series", len(frames), tc.series)
			}
			notices := frames[0].Meta.Notices
			if len(notices) != tc.wantTotal {
				t.Fatalf("notices = %+v, want %d", notices, tc.wantTotal)
			}
			if tc.wantText != "" {
				last := notices[len(notices)-1]
				if last.Severity != data.NoticeSeverityWarning || !strings.Contains(last.Text, tc.wantText) {
					t.Fatalf("last notice = %+v, want a warning containing %q", last, tc.wantText)
				}
			}
			for _, f := range frames[1:] {
				if len(f.Meta.Notices) != 0 || f.Meta.ExecutedQueryString != "" {
					t.Fatal("only the first frame carries response-wide metadata")
				}
			}
		})
	}
}

func TestDisplayName(t *testing.T) {
	labels := data.Labels{"__name__": "vllm:e2e_request_latency_seconds", "aws.sagemaker.endpoint.name": "ep-1", "@resource.host.id": "i-1", "b": `q"uote`}
	tests := []struct {
		legend string
		labels data.Labels
		want   string
	}{
		{"{{aws.sagemaker.endpoint.name}}", labels, "ep-1"},
		{"{{ @resource.host.id }} / {{__name__}}", labels, "i-1 / vllm:e2e_request_latency_seconds"},
		{"{{nope}}x", labels, "x"},
		{"{{unclosed", labels, "{{unclosed"},
		{"}}{{b}}{{", labels, `}}q"uote{{`},
		{"plain", labels, "plain"},
		{"__auto", labels, ""},
		{"__auto", nil, "EXPR"},
		{"", labels, `vllm:e2e_request_latency_seconds{@resource.host.id="i-1", aws.sagemaker.endpoint.name="ep-1", b="q\"uote"}`},
		{"", data.Labels{"__name__": "up"}, "up"},
		{"", data.Labels{"job": "a"}, `{job="a"}`},
		{"", data.Labels{}, "EXPR"},
		{"", nil, "EXPR"},
	}
	for _, tc := range tests {
		t.Run(tc.legend, func(t *testing.T) {
			if got := displayName(tc.legend, "EXPR", tc.labels); got != tc.want {
				t.Fatalf("displayName(%q) = %q, want %q", tc.legend, got, tc.want)
			}
		})
	}
}

func TestSpecialValuesAndTimes(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1764496800.001,"NaN"],[1764496800.002,"+Inf"],[1764496800.003,"-Inf"],[-1.5,"0"]]}]}}`
	frames, err := readFrames(strings.NewReader(body), frameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := frames[0]
	if f.Rows() != 4 {
		t.Fatalf("rows = %d", f.Rows())
	}
	v0, _ := f.Fields[1].ConcreteAt(0)
	v1, _ := f.Fields[1].ConcreteAt(1)
	v2, _ := f.Fields[1].ConcreteAt(2)
	if !math.IsNaN(v0.(float64)) || !math.IsInf(v1.(float64), 1) || !math.IsInf(v2.(float64), -1) {
		t.Fatalf("values = %v %v %v", v0, v1, v2)
	}
	for i, want := range []time.Time{time.UnixMilli(1764496800001), time.UnixMilli(1764496800002), time.UnixMilli(1764496800003), time.UnixMilli(-1500)} {
		if got := f.Fields[0].At(i).(time.Time); !got.Equal(want) {
			t.Errorf("time %d = %v, want %v", i, got, want)
		}
	}
}

func TestPointCap(t *testing.T) {
	body := string(fleetMatrixBody(3, 10)) // 30 points
	tests := []struct {
		max     int
		wantErr bool
	}{{29, true}, {30, false}, {0, false}}
	for _, tc := range tests {
		frames, err := readFrames(strings.NewReader(body), frameOptions{MaxPoints: tc.max})
		var tooLarge *promclient.TooLargeError
		if tc.wantErr {
			if !errors.As(err, &tooLarge) || tooLarge.Unit != "points" || !strings.Contains(err.Error(), "raise the step") {
				t.Errorf("MaxPoints %d: err %v, want a points TooLargeError saying to raise the step", tc.max, err)
			}
			continue
		}
		if err != nil || len(frames) != 3 {
			t.Errorf("MaxPoints %d: %d frames, err %v", tc.max, len(frames), err)
		}
	}
	// An answer decoded under a higher cap (a cache assembling parts) is capped by Frames.
	a, err := promclient.ReadAnswer(strings.NewReader(body), 30)
	if err != nil {
		t.Fatal(err)
	}
	var tooLarge *promclient.TooLargeError
	if frames, err := framesOf(a, frameOptions{MaxPoints: 29}); !errors.As(err, &tooLarge) || tooLarge.Limit != 29 || frames != nil {
		t.Errorf("Frames with MaxPoints 29 of 30 points: %d frames, err %v", len(frames), err)
	}
}

// AddLabels go on every series (and scalar) that lacks them, before the legend is formatted;
// a series that has the label keeps its own value.
func TestAddLabels(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"__name__":"up","job":"a"},"values":[[1,"1"]]},
		{"metric":{"__name__":"up","job":"b","@aws.region":"eu-west-1"},"values":[[1,"2"]]},
		{"metric":{},"values":[[1,"3"]]}]}}`
	add := data.Labels{"@aws.region": "us-west-2"}
	frames, err := readFrames(strings.NewReader(body), frameOptions{Expr: "up", LegendFormat: "{{job}} {{@aws.region}}", AddLabels: add})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ region, name string }{{"us-west-2", "a us-west-2"}, {"eu-west-1", "b eu-west-1"}, {"us-west-2", " us-west-2"}}
	if len(frames) != len(want) {
		t.Fatalf("%d frames, want %d", len(frames), len(want))
	}
	for i, w := range want {
		f := frames[i].Fields[1]
		if f.Labels["@aws.region"] != w.region || f.Config == nil || f.Config.DisplayNameFromDS != w.name {
			t.Errorf("series %d: labels %v, display name %+v; want region %q, name %q", i, f.Labels, f.Config, w.region, w.name)
		}
	}
	if add["job"] != "" || len(add) != 1 {
		t.Errorf("the options' labels were changed: %v", add)
	}
	scalar := `{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`
	frames, err = readFrames(strings.NewReader(scalar), frameOptions{Expr: "1+1", AddLabels: add})
	if err != nil || frames[0].Fields[1].Labels["@aws.region"] != "us-west-2" {
		t.Errorf("scalar: %v %v", frames, err)
	}
}

// An Answer's frames are built without changing it (caches share answers), share none of
// its memory, and share one time field between consecutive series with the same times (as
// the answer shares their times).
func TestFramesLeaveTheAnswerAlone(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"job":"a"},"values":[[1,"1"],[2,"2"]]},
		{"metric":{"job":"b"},"values":[[1,"3"],[2,"4"]]},
		{"metric":{"job":"c"},"values":[[1,"5"],[3,"6"]]}]}}`
	a, err := promclient.ReadAnswer(strings.NewReader(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if &a.Series[0].T[0] != &a.Series[1].T[0] || &a.Series[1].T[0] == &a.Series[2].T[0] {
		t.Error("series 0 and 1 (same times) should share their times, series 2 (other times) not")
	}
	before, _ := json.Marshal(a)
	opts := frameOptions{Expr: "m", AddLabels: data.Labels{"@aws.region": "us-west-2"}}
	frames, err := framesOf(a, opts)
	if err != nil || len(frames) != 3 {
		t.Fatalf("%d frames, %v", len(frames), err)
	}
	for _, f := range frames {
		f.Fields[1].Labels["job"] = "changed"
		f.Fields[1].Set(0, 99.0)
	}
	if after, _ := json.Marshal(a); !bytes.Equal(before, after) {
		t.Fatalf("building and changing the frames changed the answer:\n%s\n%s", before, after)
	}
	if frames[0].Fields[0] != frames[1].Fields[0] || frames[1].Fields[0] == frames[2].Fields[0] {
		t.Error("series 0 and 1 (same times) should share their time field, series 2 (other times) not")
	}
	again, err := framesOf(a, opts)
	if err != nil || again[2].Fields[1].Labels["job"] != "c" || again[2].Fields[1].At(0).(float64) != 5 {
		t.Fatalf("frames built again: %v %v", again, err)
	}
}

// FuzzRead feeds arbitrary bodies and legends. The converter must never panic, and any
// frames it returns must be well formed: equal-length fields, metadata on every frame and
// the executed query on the first.
func FuzzRead(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, legend string) {
		frames, err := readFrames(bytes.NewReader(body), frameOptions{Expr: "up", LegendFormat: legend, Step: 15 * time.Second})
		if err != nil {
			if frames != nil {
				t.Fatal("frames returned together with an error")
			}
			return
		}
		if len(frames) == 0 {
			t.Fatal("success without a frame")
		}
		if frames[0].Meta == nil || frames[0].Meta.ExecutedQueryString == "" {
			t.Fatal("first frame lacks the executed query")
		}
		for i, fr := range frames {
			if fr.Meta == nil {
				t.Fatalf("frame %d has no meta", i)
			}
			if _, err := fr.RowLen(); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
		}
	})
}

// The query inspector's text names the expression as sent, its step and what it asked for:
// the range of a range query, the time of an instant one.
func TestExecutedQuery(t *testing.T) {
	start := time.Date(2026, 6, 5, 12, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	local := time.FixedZone("UTC+2", 2*60*60)
	for _, tc := range []struct {
		name string
		opts frameOptions
		want string
	}{
		{"range", frameOptions{Expr: `sum(x{"a.b"="c"})`, Step: time.Minute, Start: start, End: end},
			"Expr: sum(x{\"a.b\"=\"c\"})\nStep: 1m\nRange: 2026-06-05T12:00:00Z to 2026-06-05T13:00:00Z"},
		{"range in another zone is shown in UTC", frameOptions{Expr: "x", Step: 30 * time.Second, Start: start.In(local), End: end.In(local)},
			"Expr: x\nStep: 30s\nRange: 2026-06-05T12:00:00Z to 2026-06-05T13:00:00Z"},
		{"instant", frameOptions{Expr: "x", Step: time.Minute, End: end}, "Expr: x\nStep: 1m\nTime: 2026-06-05T13:00:00Z"},
		{"no time (converter only)", frameOptions{Expr: "x", Step: time.Minute}, "Expr: x\nStep: 1m"},
	} {
		if got := executedQuery(tc.opts); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
