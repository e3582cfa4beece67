package simulator

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// digest is an Appendable that hashes every committed sample; the sum of the hashes does
// not depend on the order in which parallel appenders commit.
type digest struct {
	mu      sync.Mutex
	h       uint64
	samples int
}

type digestApp struct {
	storage.Appender // only the methods below are called
	d                *digest
	h                uint64
	n                int
}

func (d *digest) Appender(context.Context) storage.Appender { return &digestApp{d: d} }

func (a *digestApp) add(s string) {
	f := fnv.New64a()
	_, _ = f.Write([]byte(s))
	a.h += f.Sum64()
	a.n++
}

func (a *digestApp) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	a.add(fmt.Sprintf("%x %d %x", l.Hash(), t, math.Float64bits(v)))
	return 1, nil
}

func (a *digestApp) AppendHistogram(_ storage.SeriesRef, l labels.Labels, t int64, h *histogram.Histogram, _ *histogram.FloatHistogram) (storage.SeriesRef, error) {
	a.add(fmt.Sprintf("%x %d %d %x %v", l.Hash(), t, h.Count, math.Float64bits(h.Sum), h.PositiveBuckets))
	return 1, nil
}

func (a *digestApp) Commit() error {
	a.d.mu.Lock()
	defer a.d.mu.Unlock()
	a.d.h += a.h
	a.d.samples += a.n
	return nil
}

func (a *digestApp) Rollback() error { return nil }

func run(t *testing.T, scenario string, seed int64, workers int) *digest {
	t.Helper()
	sim, err := New(fleet.Default(), scenario, seed)
	if err != nil {
		t.Fatal(err)
	}
	sim.workers = workers
	d := &digest{}
	if _, err := sim.Backfill(context.Background(), d, testNow.Add(-2*time.Hour), testNow, time.Minute); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDeterministicForASeed(t *testing.T) {
	// Parallel and sequential stepping must give the same series.
	a, b, c := run(t, "kv-saturation", 1, 1), run(t, "kv-saturation", 1, 3), run(t, "kv-saturation", 2, 2)
	if a.samples == 0 || a.h != b.h || a.samples != b.samples {
		t.Errorf("same seed differs: %x/%d vs %x/%d", a.h, a.samples, b.h, b.samples)
	}
	if a.h == c.h {
		t.Error("different seeds gave identical output")
	}
}

func TestNewRejectsUnknownScenarioAndNilFleet(t *testing.T) {
	if _, err := New(fleet.Default(), "nope", 1); err == nil || !strings.Contains(err.Error(), "healthy, kv-saturation") {
		t.Errorf("unknown scenario: %v", err)
	}
	if _, err := New(nil, "healthy", 1); err == nil {
		t.Error("nil fleet accepted")
	}
	sim, _ := New(fleet.Default(), "healthy", 1)
	if _, err := sim.Backfill(context.Background(), &digest{}, testNow, testNow.Add(-time.Hour), time.Minute); err == nil {
		t.Error("backwards range accepted")
	}
	if _, err := sim.Backfill(context.Background(), &digest{}, testNow.Add(-time.Hour), testNow, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Backfill(context.Background(), &digest{}, testNow.Add(-time.Hour), testNow, time.Minute); err == nil || !strings.Contains(err.Error(), "not after the last appended step") {
		t.Errorf("overlapping backfill: %v", err)
	}
}

// The queue model: with more load, running, KV, ITL, TTFT never go down; throughput in tokens
// is running/ITL (plus prefill time); TTFT is queue wait + prefill + one decode step.
func TestEngineModelMovesTogether(t *testing.T) {
	m := fleet.Default().Models[0]
	p := engineParams{prompt: float64(m.PromptTokens), output: float64(m.OutputTokens), maxSeqs: float64(m.MaxNumSeqs),
		refBatch: float64(m.MaxNumSeqs), itl: m.ITLMillis / 1000, prefillTokensPS: m.PrefillTokensPerS, kvTokens: 40000}
	var prev engineState
	for _, lambda := range []float64{0.1, 0.5, 1, 2, 4, 8, 16} {
		backlog := 0.0
		var st engineState
		for range 30 { // let the backlog settle
			st = p.step(lambda, 60, &backlog)
		}
		if st.running < prev.running || st.kv < prev.kv || st.itl < prev.itl || st.ttft < prev.ttft || st.waiting < prev.waiting {
			t.Errorf("lambda %v: state went down: %+v after %+v", lambda, st, prev)
		}
		if st.kv > 0.99 || st.running > st.batchCap+1e-9 {
			t.Errorf("lambda %v: kv %v running %v cap %v out of bounds", lambda, st.kv, st.running, st.batchCap)
		}
		tokensPS := st.throughput * p.output
		if ratio := tokensPS / (st.running / st.itl); ratio < 0.8 || ratio > 1.0001 {
			t.Errorf("lambda %v: tokens/s %v vs running/ITL %v (ratio %v)", lambda, tokensPS, st.running/st.itl, ratio)
		}
		prefill := p.prompt / p.prefillTokensPS * (1 + 0.3*st.running/p.refBatch)
		if d := st.ttft - (st.queueWait + prefill + st.itl); math.Abs(d) > 1e-9 {
			t.Errorf("lambda %v: TTFT %v != queue %v + prefill %v + ITL %v", lambda, st.ttft, st.queueWait, prefill, st.itl)
		}
		if d := st.e2e - (st.queueWait + st.inference); math.Abs(d) > 1e-9 {
			t.Errorf("lambda %v: e2e %v != queue + inference", lambda, st.e2e)
		}
		prev = st
	}
	if prev.kv < 0.9 || prev.waiting < 10 {
		t.Errorf("at 16 req/s the KV-bound copy should be saturated: %+v", prev)
	}
}

func TestHistogramObserveKeepsCountsAndBoundaries(t *testing.T) {
	var ls labelSet
	h := ls.hist("x", vllmTTFTBuckets, false)
	h.observe(1000, 0.3, sigmaTTFT)
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	if total != 1000 || h.count != 1000 || math.Abs(h.sum-300) > 1e-9 {
		t.Fatalf("counts %d, count %d, sum %v", total, h.count, h.sum)
	}
	got := h.next()
	if err := got.Validate(); err != nil {
		t.Fatalf("invalid native histogram: %v", err)
	}
	if got.Schema != histogram.CustomBucketsSchema || len(got.CustomValues) != len(vllmTTFTBuckets) {
		t.Errorf("not an NHCB with the engine's bounds: schema %d, %d bounds", got.Schema, len(got.CustomValues))
	}
	// The median of a log-normal with mean 0.3 and σ 0.35 is about 0.28: bucket (0.25, 0.5].
	if q := got.ToFloat(nil); q == nil {
		t.Fatal("no float conversion")
	}
	if h.next() == got {
		t.Error("the buffer just handed to the TSDB was reused")
	}
}

// Across the stored data: the engine's e2e equals queue time plus ModelLatency, GPU memory is
// weights + KV reservation and adds up to the GPU size, and IC labels sit only on owned GPUs.
func TestStoredSeriesHangTogether(t *testing.T) {
	for _, scenario := range []string{"healthy", "kv-saturation"} {
		db := backfilled(t, scenario, 3)
		const ic = `"aws.sagemaker.inference_component.name"="chat-llama-8b"`
		const sel = `{` + ic + `}`
		e2e := one(t, db, `histogram_avg(sum(rate({"vllm:e2e_request_latency_seconds", `+ic+`}[30m])))`)
		queue := one(t, db, `histogram_avg(sum(rate({"vllm:request_queue_time_seconds", `+ic+`}[30m])))`)
		model := one(t, db, `histogram_avg(sum(sum_over_time(ModelLatencyForIc{InferenceComponentName="chat-llama-8b"}[30m]))) / 1e6`)
		if d := math.Abs(e2e - (queue + model)); d > 0.05*e2e {
			t.Errorf("%s: e2e %v != queue %v + ModelLatency %v", scenario, e2e, queue, model)
		}
		if got := query(t, db, `DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE != 23028`, ""); len(got) != 0 {
			t.Errorf("%s: FB used + free differs from the GPU size: %v", scenario, got)
		}
		weightsPlusKV := math.Round(0.9 * 23028)
		if got := one(t, db, `max(DCGM_FI_DEV_FB_USED`+sel+`)`); got != weightsPlusKV {
			t.Errorf("%s: vLLM GPU memory %v, want weights + KV reservation %v", scenario, got, weightsPlusKV)
		}
		if got := query(t, db, `DCGM_FI_DEV_FB_USED{"aws.sagemaker.endpoint.name"="chat-ic", "aws.sagemaker.inference_component.name"=""} > 0`, ""); len(got) != 0 {
			t.Errorf("%s: GPUs without an IC label hold memory: %v", scenario, got)
		}
		if got := query(t, db, `DCGM_FI_DEV_FB_USED{"aws.sagemaker.inference_component.name"!=""} == 0`, ""); len(got) != 0 {
			t.Errorf("%s: IC-labelled GPUs hold no model: %v", scenario, got)
		}
		// Invocations per endpoint equal the sum over its instances (same delta intervals).
		ep := one(t, db, `sum(sum_over_time(Invocations{EndpointName="chat-ic"}[1h]))`)
		inst := one(t, db, `sum(sum_over_time(InvocationsByInstanceId{EndpointName="chat-ic"}[1h]))`)
		if ep == 0 || ep != inst {
			t.Errorf("%s: Invocations %v vs by instance %v", scenario, ep, inst)
		}
	}
}

// Every series carries its type and the account labels; vended ones are delta with the
// SageMaker scope; scraped ones carry the host resource labels.
func TestEverySeriesHasItsSystemLabels(t *testing.T) {
	db := backfilled(t, "healthy", 1)
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	n := 0
	for set.Next() {
		l := set.At().Labels()
		n++
		switch l.Get(sc.LabelType) {
		case sc.TypeGauge, sc.TypeCounter, sc.TypeHistogram:
		default:
			t.Errorf("%s: bad %s", l, sc.LabelType)
		}
		if l.Get(sc.LabelAccount) != "123456789012" || l.Get(sc.LabelRegion) != "us-east-1" {
			t.Errorf("%s: missing account/region", l)
		}
		vended := l.Has(sc.LabelScopeName)
		if vended && (l.Get(sc.LabelTemporality) != sc.TemporalityDelta || l.Get(sc.LabelScopeName) != sc.ScopeSageMakerVended) {
			t.Errorf("%s: vended series without delta temporality or scope", l)
		}
		scraped := strings.HasPrefix(l.Get(labels.MetricName), "DCGM_") || strings.HasPrefix(l.Get(labels.MetricName), "node_") || l.Has(sc.LabelModelName)
		if scraped && (!l.Has(sc.LabelHostID) || !l.Has(sc.LabelHostType) || !l.Has(sc.LabelAZ) || !l.Has(sc.LabelEndpoint)) {
			t.Errorf("%s: scraped series without host/endpoint labels", l)
		}
	}
	if set.Err() != nil || n < 500 {
		t.Fatalf("%d series, err %v", n, set.Err())
	}
}

// The streaming view: FirstChunkModelLatency is the engine's TTFT of the streamed share of
// requests and FirstChunkOverheadLatency their OverheadLatency. In engine-queueing the first
// chunk waits in the engine queue, which ModelLatency does not include.
func TestFirstChunkLatencyFollowsTTFT(t *testing.T) {
	avg := func(db *tsdb.DB, metric, ep string) float64 {
		return one(t, db, `histogram_avg(sum(sum_over_time(`+metric+`{EndpointName="`+ep+`"}[30m])))`)
	}
	healthy, queueing := backfilled(t, "healthy", 2), backfilled(t, "engine-queueing", 2)
	for scenario, db := range map[string]*tsdb.DB{"healthy": healthy, "engine-queueing": queueing} {
		// summarize is a single-model vLLM endpoint: its TTFT histogram covers the same requests.
		ttft := one(t, db, `histogram_avg(sum(rate({"vllm:time_to_first_token_seconds", "aws.sagemaker.endpoint.name"="summarize"}[30m])))`)
		if fc := avg(db, sc.FirstChunkModelLatency, "summarize") / 1e6; math.Abs(fc-ttft) > 0.05*ttft {
			t.Errorf("%s: FirstChunkModelLatency %v s, engine TTFT %v s", scenario, fc, ttft)
		}
		for _, ep := range []string{"chat-ic", "summarize", "docs-qa"} {
			fo, o := avg(db, sc.FirstChunkOverheadLatency, ep), avg(db, sc.OverheadLatency, ep)
			if math.Abs(fo-o) > 0.05*o {
				t.Errorf("%s %s: FirstChunkOverheadLatency %v µs, OverheadLatency %v µs", scenario, ep, fo, o)
			}
			n := `histogram_count(sum(sum_over_time(%s{EndpointName="` + ep + `"}[1h])))`
			streamed := one(t, db, fmt.Sprintf(n, sc.FirstChunkModelLatency)) / one(t, db, fmt.Sprintf(n, sc.ModelLatency))
			if math.Abs(streamed-streamShare) > 0.01 {
				t.Errorf("%s %s: %v of requests have a first chunk, want %v", scenario, ep, streamed, streamShare)
			}
		}
	}
	firstChunk := avg(queueing, sc.FirstChunkModelLatency, "chat-ic") / avg(healthy, sc.FirstChunkModelLatency, "chat-ic")
	model := avg(queueing, sc.ModelLatency, "chat-ic") / avg(healthy, sc.ModelLatency, "chat-ic")
	t.Logf("chat-ic engine-queueing/healthy: first-chunk model latency ×%.2f, model latency ×%.2f", firstChunk, model)
	if firstChunk < 3 || model > 1.2 {
		t.Errorf("engine-queueing on chat-ic: first-chunk model latency ×%.2f (want ≥ 3), ModelLatency ×%.2f (want ≤ 1.2)", firstChunk, model)
	}
}

// Errors are independent random events per instance: instances of one endpoint do not all
// report an error in the same minute (a healthy fleet of ten or more would look like an
// error spike), and the healthy error share is kept.
func TestErrorsArriveIndependentlyPerInstance(t *testing.T) {
	db := backfilled(t, "healthy", 6)
	const errs = sc.Invocation4XXErrorsByInstance + `{EndpointName="chat-ic"}`
	// Minutes in which some instance, and in which every instance, reported a 4xx.
	anyMin := one(t, db, `sum(count_over_time((count(`+errs+` > 0) > 0)[6h:1m]))`)
	allMin := one(t, db, `sum(count_over_time((count(`+errs+` > 0) == count(`+errs+`))[6h:1m]))`)
	if anyMin < 30 {
		t.Fatalf("only %v minutes with errors in 6 h: the healthy error rate is lost", anyMin)
	}
	if allMin > anyMin/10 {
		t.Fatalf("every instance erred in the same minute %v times out of %v minutes with errors: errors move in lockstep", allMin, anyMin)
	}
	share := one(t, db, `sum(sum_over_time(`+sc.Invocation4XXErrors+`{EndpointName="chat-ic"}[6h])) / sum(sum_over_time(`+sc.Invocations+`{EndpointName="chat-ic"}[6h]))`)
	if share < 0.0015 || share > 0.0025 {
		t.Fatalf("4xx share %v, want about %v", share, share4xx)
	}
}

// Incident names the resource each scenario picked in the default fleet (SCENARIOS.md).
func TestIncidentNamesTheTarget(t *testing.T) {
	for _, c := range []struct{ scenario, level, name, endpoint string }{
		{"healthy", "", "", ""},
		{"kv-saturation", "inference-component", "chat-llama-8b", "chat-ic"},
		{"engine-queueing", "inference-component", "chat-qwen-7b", "chat-ic"},
		{"scaling-not-firing", "inference-component", "code-llama-8b", "chat-ic"},
		{"slow-cold-start", "inference-component", "chat-llama-8b", "chat-ic"},
		{"az-imbalance", "availability-zone", "us-east-1c", "chat-ic"},
		{"ice-exhaustion", "instance-type", "ml.g5.12xlarge", "chat-ic"},
		{"model-crash", "instance", "", "summarize"},
		{"gpu-memory-leak", "instance", "", "chat-ic"},
		{"enrichment-off", "account", "123456789012", ""},
		{"bad-deploy", "inference-component", "chat-llama-8b", "chat-ic"},
		{"bad-config", "endpoint", "summarize", "summarize"},
		{"benign-deploy", "inference-component", "chat-qwen-7b", "chat-ic"},
	} {
		s, err := New(fleet.Default(), c.scenario, 42)
		if err != nil {
			t.Fatal(err)
		}
		got := s.Incident()
		if got.Scenario != c.scenario || got.Level != c.level || got.Endpoint != c.endpoint || (c.name != "" && got.Name != c.name) || (c.level != "" && got.Name == "") {
			t.Errorf("%s: %+v", c.scenario, got)
		}
	}
}
