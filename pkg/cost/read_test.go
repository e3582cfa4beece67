package cost

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// series is an answer's series with labels ls, one sample per hour of n.
func answerSeries(ls map[string]string, n ...float64) Series {
	s := Series{Labels: func(l string) string { return ls[l] }, V: n}
	for i := range n {
		s.T = append(s.T, int64(i)*3600e3)
	}
	return s
}

// TestSeriesWithoutGPULabel: an instance whose DCGM series lack the gpu label (the
// Instances query marks it instead of counting one GPU) next to a labelled one, both
// ml.g5.12xlarge (4 GPUs), IC a holding 2 GPUs of each for two hours. Unfiltered, the
// unlabelled instance's GPUs are its holders' series: 4 per instance, a's share half of
// each. Filtered to a, its series are a's only: a's line and the type's GPUs are gaps naming
// the missing label, not the whole instance; the labelled instance is unaffected.
func TestSeriesWithoutGPULabel(t *testing.T) {
	const typ = "ml.g5.12xlarge"
	holder := func(host, ic string) map[string]string {
		ls := map[string]string{sc.LabelEndpoint: "e", sc.LabelHostID: host, sc.LabelHostType: typ}
		if ic != "" {
			ls[sc.LabelInferenceComp], ls[sc.LabelContainerID] = ic, ic+"-"+host
		}
		return ls
	}
	book := pricing.NewBook([]pricing.Price{{InstanceType: typ, USDPerHour: 8}})
	for _, tc := range []struct {
		name     string
		narrowed bool
	}{{"unfiltered", false}, {"filtered to a", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ex := Exprs{GPUs: "gpus", Instances: "instances", Output: "out", Input: "in", Narrowed: tc.narrowed}
			answers := map[string][]Series{
				"gpus":      {answerSeries(holder("labelled", "a"), 2, 2), answerSeries(holder("bare", "a"), 2, 2)},
				"instances": {answerSeries(holder("labelled", ""), 4, 4), answerSeries(map[string]string{sc.LabelEndpoint: "e", sc.LabelHostID: "bare", sc.LabelHostType: typ, noGPULabel: "1"}, 1, 1)},
			}
			if !tc.narrowed {
				answers["gpus"] = append(answers["gpus"], answerSeries(holder("labelled", ""), 2, 2), answerSeries(holder("bare", ""), 2, 2))
			}
			query := func(_ context.Context, expr string) (Answer, error) { return Answer{Series: answers[expr]}, nil }
			in, err := Read(context.Background(), Input{Region: region, From: time.UnixMilli(0), To: time.UnixMilli(2 * 3600e3), Step: time.Hour, Prices: book}, ex, 500, query, query)
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Instances) != 1 || len(in.NoGPULabel) != 1 || in.NoGPULabel[0].Host != "bare" || in.Narrowed != tc.narrowed {
				t.Fatalf("instances %+v, without the gpu label %+v, narrowed %v", in.Instances, in.NoGPULabel, in.Narrowed)
			}
			tps := TypePrices(in)
			if len(tps) != 1 {
				t.Fatalf("type prices %+v, want one", tps)
			}
			byHost := map[string]Line{}
			for _, l := range Lines(in) {
				if l.IC == "a" {
					byHost[strings.TrimPrefix(l.Copy, "a-")] = l
				}
			}
			labelled, bare := byHost["labelled"], byHost["bare"]
			if labelled.Gap != nil || !near(labelled.Spend, 8) {
				t.Errorf("a on the labelled instance: %g USD (gap %v), want half of 2 h × $8 = $8", labelled.Spend, labelled.Gap)
			}
			if !tc.narrowed {
				if tps[0].GPUs != 4 || tps[0].Gap != nil {
					t.Errorf("%s: %d GPUs (gap %v), want its 4 series", typ, tps[0].GPUs, tps[0].Gap)
				}
				if bare.Gap != nil || !near(bare.Spend, 8) || !near(bare.InstanceHours, 1) {
					t.Errorf("a on the unlabelled instance: %g USD over %g instance-h (gap %v), want $8 over 1", bare.Spend, bare.InstanceHours, bare.Gap)
				}
				return
			}
			if tps[0].GPUs != 0 || tps[0].Gap == nil || !strings.Contains(tps[0].Gap.Error(), "lack the "+sc.LabelGPU+" label") {
				t.Errorf("%s filtered: %d GPUs (gap %v), want a gap naming the %s label", typ, tps[0].GPUs, tps[0].Gap, sc.LabelGPU)
			}
			if bare.Gap == nil || !strings.Contains(bare.Gap.Error(), "instance bare lack") || !math.IsNaN(bare.Spend) || !math.IsNaN(bare.InstanceHours) {
				t.Errorf("a on the unlabelled instance filtered: %g USD over %g instance-h (gap %v), want unknown with a gap naming it", bare.Spend, bare.InstanceHours, bare.Gap)
			}
		})
	}
}

// TestReadRefusesCutAnswers: any of the four answers the upstream cut (its warning) or that
// holds the series limit fails the read with a *TruncatedError naming the query; one below
// the limit is read.
func TestReadRefusesCutAnswers(t *testing.T) {
	const limit = 5
	ex := Exprs{GPUs: "gpus", Instances: "instances", Output: "out", Input: "in"}
	for _, expr := range []string{ex.GPUs, ex.Instances, ex.Output, ex.Input} {
		for _, tc := range []struct {
			n   int
			cut bool
			bad bool
		}{{limit - 1, false, false}, {limit, false, true}, {limit + 1, false, true}, {1, true, true}} {
			query := func(_ context.Context, e string) (Answer, error) {
				if e != expr {
					return Answer{}, nil
				}
				a := Answer{Cut: tc.cut}
				for range tc.n {
					a.Series = append(a.Series, answerSeries(map[string]string{}, 1))
				}
				return a, nil
			}
			_, err := Read(context.Background(), Input{}, ex, limit, query, query)
			var cut *TruncatedError
			if got := errors.As(err, &cut); got != tc.bad || got && (cut.Query != expr || !strings.Contains(err.Error(), "5 series")) {
				t.Errorf("%s with %d series (cut %v): error %v, want truncated %v", expr, tc.n, tc.cut, err, tc.bad)
			}
		}
	}
}
