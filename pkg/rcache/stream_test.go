package rcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/internal/promtest"
	"github.com/inferscope/sagemaker-datasource/pkg/converter"
)

// TestTeeDecodeReadPanicDoesNotLeak: a converter that panics mid-body (the plugin recovers
// query panics with panics.Recover and goes on serving) must not leave the decoder
// goroutine blocked on the pipe for ever.
func TestTeeDecodeReadPanicDoesNotLeak(t *testing.T) {
	body := promtest.LargeMatrix(20, 200)
	before := runtime.NumGoroutine()
	for range 10 {
		func() {
			defer func() { _ = recover() }()
			teeDecode(bytes.NewReader(body), func(r io.Reader) error {
				buf := make([]byte, 100)
				_, _ = io.ReadFull(r, buf)
				panic("converter bug")
			})
		}()
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > 0 {
		t.Fatalf("%d decoder goroutines left blocked after the converter panicked", n)
	}
}

// TestTeeDecodeStopsAndErrors: the converter never blocks and nothing partial is kept,
// whatever the decoder or the reader does.
func TestTeeDecodeStopsAndErrors(t *testing.T) {
	body := promtest.LargeMatrix(30, 500)
	cases := []struct {
		name    string
		body    io.Reader
		read    Read
		wantM   bool
		wantErr bool
	}{
		{"reads all", bytes.NewReader(body), func(r io.Reader) error { _, err := io.ReadAll(r); return err }, true, false},
		{"stops at the closing brace", bytes.NewReader(body), exactRead(len(body)), true, false},
		{"stops early, no error", bytes.NewReader(body), exactRead(len(body) / 2), false, false},
		{"stops one byte short", bytes.NewReader(body), exactRead(len(body) - 1), false, false},
		{"error mid-way", bytes.NewReader(body), func(r io.Reader) error { _, _ = io.ReadFull(r, make([]byte, 1000)); return errors.New("x") }, false, true},
		{"body cut", io.MultiReader(bytes.NewReader(body[:len(body)/3]), errReader{}), func(r io.Reader) error { _, err := io.ReadAll(r); return err }, false, true},
		{"not json: decoder stops at once", strings.NewReader(strings.Repeat("x", 1<<20)), func(r io.Reader) error { _, err := io.ReadAll(r); return err }, false, false},
		{"trailing garbage: decoder stops after the brace", io.MultiReader(bytes.NewReader(body), strings.NewReader(strings.Repeat(" ", 1<<20))), func(r io.Reader) error { _, err := io.ReadAll(r); return err }, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var m *matrix
			var err error
			go func() { m, err = teeDecode(tc.body, tc.read); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("blocked")
			}
			if (m != nil) != tc.wantM || (err != nil) != tc.wantErr {
				t.Errorf("m %v err %v", m != nil, err)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// exactRead reads exactly n bytes (small reads), then returns nil.
func exactRead(n int) Read {
	return func(r io.Reader) error {
		_, err := io.ReadFull(r, make([]byte, n))
		return err
	}
}

// TestPromclientRetryCallsReadAgain: a fetch that calls read twice (promclient retrying a
// cut body) gives the converter the second body from the start, and the extent what the
// successful attempt had.
func TestRetriedReadKeepsTheSecondAttempt(t *testing.T) {
	good := promtest.LargeMatrix(3, 10)
	attempts := 0
	fetch := func(ctx context.Context, s, e time.Time, read func(io.Reader) error) error {
		for {
			attempts++
			var r io.Reader = bytes.NewReader(good)
			if attempts == 1 {
				r = io.MultiReader(bytes.NewReader(good[:len(good)/2]), errReader{})
			}
			err := read(r)
			if err == nil || attempts > 1 {
				return err
			}
		}
	}
	c := New(Options{Now: func() time.Time { return time.Unix(1700000000+3600, 0) }})
	step := time.Minute
	k := Key{DataSource: "a", Expr: "m", Step: step}
	start, end := time.Unix(1700000000, 0), time.Unix(1700000000+9*60, 0)
	var reads int
	var got []byte
	res, err := c.QueryRange(context.Background(), k, start, end, fetch, func(r io.Reader) (err error) {
		reads++
		got, err = io.ReadAll(r)
		return err
	})
	if err != nil || res.Outcome != Miss || reads != 2 || !bytes.Equal(got, good) {
		t.Fatalf("%+v %v reads %d", res, err, reads)
	}
	hit, res, err := queryRange(c, context.Background(), k, start, end, bodyFetch(func(context.Context, time.Time, time.Time) ([]byte, error) {
		return nil, errors.New("no call expected")
	}))
	if err != nil || res.Outcome != Hit || frames(t, hit, step) != frames(t, good, step) {
		t.Fatalf("hit after a retried miss: %+v %v", res, err)
	}
}

// TestNonMatrixMissReachesReadOnce: an answer the extent cannot keep is read once, as
// fetched, whether the whole range or a part was fetched.
func TestNonMatrixMissReachesReadOnce(t *testing.T) {
	step := time.Minute
	now := time.Unix(1700000000+3600, 0)
	c := New(Options{Now: func() time.Time { return now }, Fresh: -1})
	k := Key{DataSource: "a", Expr: "m", Step: step}
	start, end := time.Unix(1700000000, 0), time.Unix(1700000000+9*60, 0)
	for _, body := range [][]byte{
		[]byte(`{"status":"error","errorType":"execution","error":"boom"}`),
		[]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`),
		[]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,"1e999"]]}]}}`),
	} {
		reads := 0
		res, _ := c.QueryRange(context.Background(), k, start, end, bodyFetch(func(context.Context, time.Time, time.Time) ([]byte, error) { return body, nil }),
			func(r io.Reader) error { reads++; _, err := io.ReadAll(r); return err })
		if reads != 1 || res.Outcome != Bypass {
			t.Errorf("%s: %d reads, %s", body, reads, res.Outcome)
		}
	}
}

// --- exactness: frames of encode(decodeMatrix(body)) equal the body's own frames ---

func randValueText(rng *rand.Rand) string {
	switch rng.IntN(14) {
	case 0:
		return []string{"NaN", "+Inf", "-Inf", "Inf", "inf", "-inf", "nan", "Infinity", "-0", "0", "+0", "-0.0"}[rng.IntN(12)]
	case 1: // any bit pattern, incl. subnormals, NaN payloads, huge
		f := math.Float64frombits(rng.Uint64())
		return strconv.FormatFloat(f, []byte("gef")[rng.IntN(3)], -1, 64)
	case 2: // subnormal
		f := math.Float64frombits(rng.Uint64N(1 << 52))
		return strconv.FormatFloat(f, 'e', -1, 64)
	case 3: // near max
		return strconv.FormatFloat(math.MaxFloat64*(0.5+rng.Float64()/2), 'g', -1, 64)
	case 4: // more digits than needed
		return strconv.FormatFloat(rng.NormFloat64()*1e6, 'f', 25, 64)
	case 5: // exponent forms
		return fmt.Sprintf("%dE%d", rng.IntN(1000)-500, rng.IntN(600)-300)
	case 6: // hex float (strconv accepts)
		return strconv.FormatFloat(rng.NormFloat64(), 'x', -1, 64)
	case 7:
		return "5e-324"
	case 8:
		return "4.9406564584124654e-324"
	case 9: // halfway-ish long decimal
		return "0.1000000000000000055511151231257827021181583404541015625"
	default:
		return strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)), 'g', -1, 64)
	}
}

func randTimeText(rng *rand.Rand, ms int64) string {
	secs := float64(ms) / 1000
	switch rng.IntN(6) {
	case 0:
		return strconv.FormatFloat(secs, 'e', -1, 64)
	case 1: // sub-millisecond noise, rounded by both readers
		return strconv.FormatFloat(secs+(rng.Float64()-0.5)*0.00099, 'f', -1, 64)
	case 2:
		return strconv.FormatFloat(secs, 'f', 6, 64)
	}
	return strconv.FormatFloat(secs, 'f', -1, 64)
}

func randHist(rng *rand.Rand) string {
	n := rng.IntN(4)
	var bs []string
	for range n {
		lo := rng.Float64() * 10
		bs = append(bs, fmt.Sprintf(`[%d,"%s","%s","%s"]`, rng.IntN(4), strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(lo+rng.Float64(), 'g', -1, 64), randValueText(rng)))
	}
	return fmt.Sprintf(`{ "count" : "%d", "sum": "%s", "buckets": [%s]}`, rng.IntN(100), randValueText(rng), strings.Join(bs, ", "))
}

// randAnswer is a Prometheus-like answer: series sorted by labels, samples in time order.
func randAnswer(rng *rand.Rand, from, step int64, n int) []byte {
	type ser struct {
		labels map[string]string
		sorted []string
	}
	var ss []ser
	seen := map[string]bool{}
	for range 1 + rng.IntN(6) {
		l := map[string]string{}
		if rng.IntN(4) > 0 {
			l["__name__"] = []string{"m", "up", "a_b"}[rng.IntN(3)]
		}
		for range rng.IntN(3) {
			l[[]string{"job", "i", "zone", "é", "a\"b"}[rng.IntN(5)]] = []string{"x", "y", "", "ü\n", "1"}[rng.IntN(5)]
		}
		s := ser{labels: l, sorted: sortedLabels(l)}
		if seen[strings.Join(s.sorted, "\xff")] {
			continue
		}
		seen[strings.Join(s.sorted, "\xff")] = true
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(a, b ser) int { return compareLabels(a.sorted, b.sorted) })
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	first := true
	for _, s := range ss {
		var vals, hists []string
		kind := rng.IntN(4) // 0,1: values; 2: histograms; 3: both
		for i := range n {
			if rng.IntN(5) == 0 {
				continue
			}
			ms := from + int64(i)*step
			if kind != 2 && (kind != 3 || rng.IntN(2) == 0) {
				vals = append(vals, fmt.Sprintf(`[%s,"%s"]`, randTimeText(rng, ms), randValueText(rng)))
			} else if kind >= 2 {
				hists = append(hists, fmt.Sprintf(`[%s,%s]`, randTimeText(rng, ms), randHist(rng)))
			}
		}
		if len(vals) == 0 && len(hists) == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		metric := new(bytes.Buffer)
		metric.WriteString("{")
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for i, k := range keys {
			if i > 0 {
				metric.WriteString(", ")
			}
			fmt.Fprintf(metric, "%q : %q", k, s.labels[k])
		}
		metric.WriteString("}")
		fmt.Fprintf(&b, `{"metric":%s`, metric)
		if len(vals) > 0 {
			fmt.Fprintf(&b, `,"values":[%s]`, strings.Join(vals, ","))
		}
		if len(hists) > 0 {
			fmt.Fprintf(&b, `,"histograms":[%s]`, strings.Join(hists, ","))
		}
		b.WriteString("}")
	}
	b.WriteString(`]}`)
	if rng.IntN(2) == 0 {
		b.WriteString(`,"warnings":["w1","w2 \"q\""]`)
	}
	if rng.IntN(2) == 0 {
		b.WriteString(`,"infos":["i1"]`)
	}
	b.WriteString(`}`)
	return []byte(b.String())
}

// TestEncodeRoundTrips: random answers (fixed seeds) kept as QueryRange keeps them
// (merged into an extent, sorted) and written back give the same frames as the answers
// themselves: the same JSON, and every value the same float64 bits.
func TestEncodeRoundTrips(t *testing.T) {
	step := int64(60000)
	from := int64(1700000000000)
	for seed := uint64(1); seed <= 800; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		n := 1 + rng.IntN(30)
		body := randAnswer(rng, from, step, n)
		m := decodeMatrix(bytes.NewReader(body))
		if m == nil {
			t.Fatalf("seed %d: not decoded\n%s", seed, body)
		}
		e := &entry{}
		e.reset()
		e.merge(m, from, from+int64(n-1)*step)
		got := encode(e.sorted(), from, from+int64(n-1)*step, e.warns, e.infos)
		if g, w := frames(t, got, time.Minute), frames(t, body, time.Minute); g != w {
			t.Fatalf("seed %d: frames differ\nbody %s\nenc  %s\n got %.3000s\nwant %.3000s", seed, body, got, g, w)
		}
		if d := exactFrames(t, got, body); d != "" {
			t.Fatalf("seed %d: %s", seed, d)
		}
	}
}

// exactFrames compares two bodies' frames value by value (float64 bits, NaN as NaN).
func exactFrames(t *testing.T, a, b []byte) string {
	t.Helper()
	fa, err := converter.Read(bytes.NewReader(a), converter.Options{Expr: "m", Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	fb, err := converter.Read(bytes.NewReader(b), converter.Options{Expr: "m", Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(fa) != len(fb) {
		return fmt.Sprintf("%d frames vs %d", len(fa), len(fb))
	}
	for i := range fa {
		if len(fa[i].Fields) != len(fb[i].Fields) {
			return fmt.Sprintf("frame %d: fields", i)
		}
		for j := range fa[i].Fields {
			x, y := fa[i].Fields[j], fb[i].Fields[j]
			if x.Len() != y.Len() || x.Name != y.Name || fmt.Sprint(x.Labels) != fmt.Sprint(y.Labels) {
				return fmt.Sprintf("frame %d field %d: shape/name/labels", i, j)
			}
			for k := range x.Len() {
				u, v := x.At(k), y.At(k)
				if fu, ok := u.(float64); ok {
					fv := v.(float64)
					if math.Float64bits(fu) != math.Float64bits(fv) && !(math.IsNaN(fu) && math.IsNaN(fv)) {
						return fmt.Sprintf("frame %d field %d row %d: %v (%x) vs %v (%x)", i, j, k, fu, math.Float64bits(fu), fv, math.Float64bits(fv))
					}
					continue
				}
				if fmt.Sprint(u) != fmt.Sprint(v) {
					return fmt.Sprintf("frame %d field %d row %d: %v vs %v", i, j, k, u, v)
				}
			}
		}
	}
	return ""
}

// TestSparseSeriesDecodeAllocation: a wide answer of sparse series (here 2,000 series of
// 3 points) allocates in proportion to its body, not room per series for the whole range
// asked (a 7-day, 1-minute range reserved 330 MB when each series got that room).
func TestSparseSeriesDecodeAllocation(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"i":"%04d"},"values":[[1700000000,"1"],[1700000060,"2"],[1700000120,"3"]]}`, i)
	}
	b.WriteString(`]}}`)
	body := []byte(b.String())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	m := decodeMatrix(bytes.NewReader(body))
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc - before
	var kept int64
	for _, s := range m.series {
		kept += s.size()
	}
	t.Logf("body %d B, allocated %d B while decoding, kept %d B (%.0fx the body)", len(body), alloc, kept, float64(alloc)/float64(len(body)))
	if alloc > 20*uint64(len(body)) {
		t.Errorf("decoding a %d B answer allocated %d B", len(body), alloc)
	}
}

func BenchmarkDecodeDense(b *testing.B) {
	body := promtest.LargeMatrix(150, 1440)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		decodeMatrix(bytes.NewReader(body))
	}
}
