package diagnosis

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/cost"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// idleFleet answers the idle rule's queries: GPU holders constant over the range, each
// instance's GPUs (the sum of its holders'), and each copy's output tokens.
type idleFleet struct {
	emptyQuerier
	holders []idleHolder
}

type idleHolder struct {
	endpoint, host, typ, ic, copy string
	gpus                          float64
	output                        float64 // the copy's output tokens in the range
}

func (f idleFleet) Range(_ context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if !strings.Contains(expr, sc.DCGMGPUUtil) {
		return model.Matrix{}, nil
	}
	perHolder := strings.Contains(expr, "group_left") // else the GPUs per instance
	var m model.Matrix
	hosts := map[string]*model.SampleStream{}
	for _, h := range f.holders {
		s := &model.SampleStream{Metric: model.Metric{sc.LabelAccount: "111122223333", sc.LabelEndpoint: model.LabelValue(h.endpoint),
			sc.LabelHostID: model.LabelValue(h.host), sc.LabelHostType: model.LabelValue(h.typ)}}
		if h.copy != "" && perHolder {
			s.Metric[sc.LabelInferenceComp], s.Metric[sc.LabelContainerID] = model.LabelValue(h.ic), model.LabelValue(h.copy)
		}
		if prev := hosts[h.host]; prev != nil && !perHolder {
			for i := range prev.Values {
				prev.Values[i].Value += model.SampleValue(h.gpus)
			}
			continue
		}
		for t := start; !t.After(end); t = t.Add(step) {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(h.gpus)})
		}
		hosts[h.host] = s
		m = append(m, s)
	}
	return m, nil
}

func (f idleFleet) Instant(_ context.Context, expr string, at time.Time) (model.Vector, error) {
	if !strings.Contains(expr, "generation_tokens") {
		return model.Vector{}, nil
	}
	var v model.Vector
	for _, h := range f.holders {
		if h.copy != "" {
			v = append(v, &model.Sample{Metric: model.Metric{sc.LabelAccount: "111122223333", sc.LabelEndpoint: model.LabelValue(h.endpoint),
				sc.LabelInferenceComp: model.LabelValue(h.ic), sc.LabelContainerID: model.LabelValue(h.copy)}, Value: model.SampleValue(h.output)})
		}
	}
	return v, nil
}

// TestIdleFindings: by hand, over 3 h at the table's prices. chat: an ml.g5.12xlarge
// ($10/h, 4 GPUs) with 2 GPUs free = $5/h = $120 a day, plus a quiet copy (10 tokens in
// 3 h) holding a whole ml.g5.2xlarge ($1/h) = $24 a day: $144, info. big: an
// ml.p4d.24xlarge ($40/h) with no copy = $960 a day, a warning. busy's copy fills its
// instance and serves: no finding. odd's type has no price: a warning, no finding.
func TestIdleFindings(t *testing.T) {
	fleet := idleFleet{holders: []idleHolder{
		{endpoint: "chat", host: "h1", typ: "ml.g5.12xlarge", ic: "chat-ic", copy: "c1", gpus: 2, output: 1e6},
		{endpoint: "chat", host: "h1", typ: "ml.g5.12xlarge", gpus: 2},
		{endpoint: "chat", host: "h2", typ: "ml.g5.2xlarge", ic: "quiet-ic", copy: "c2", gpus: 1, output: 10},
		{endpoint: "big", host: "h3", typ: "ml.p4d.24xlarge", gpus: 8},
		{endpoint: "busy", host: "h4", typ: "ml.g5.12xlarge", ic: "busy-ic", copy: "c3", gpus: 4, output: 1e6},
		{endpoint: "odd", host: "h5", typ: "ml.x.large", gpus: 1},
	}}
	book := pricing.NewBook([]pricing.Price{{InstanceType: "ml.g5.12xlarge", USDPerHour: 10}, {InstanceType: "ml.g5.2xlarge", USDPerHour: 1},
		{InstanceType: "ml.p4d.24xlarge", USDPerHour: 40}})
	end := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	e := &env{q: newMemoQuerier(fleet), prices: func(typ string) (pricing.Price, error) { return book.Lookup("us-east-1", typ) }, region: "us-east-1",
		start: end.Add(-3 * time.Hour), end: end, cfg: DefaultConfig(), warnings: &warnings{seen: map[string]bool{}}}
	e.step, e.window = stepFor(3*time.Hour, e.cfg)

	fs, err := runIdle(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(fs, func(a, b Finding) int { return strings.Compare(a.Target.Name, b.Target.Name) })
	if len(fs) != 2 || fs[0].Target.Name != "big" || fs[1].Target.Name != "chat" {
		t.Fatalf("findings %+v, want big and chat", fs)
	}
	big, chat := fs[0], fs[1]
	if big.Severity != Warning || !strings.HasPrefix(big.Summary, "$960.00 a day of big") || !big.standing {
		t.Errorf("big: %s %q", big.Severity, big.Summary)
	}
	if chat.Severity != Info || !strings.HasPrefix(chat.Summary, "$144.00 a day of chat") || !strings.Contains(chat.Summary, "($120.00 on GPUs with no copy, $24.00 on quiet copies)") {
		t.Errorf("chat: %s %q", chat.Severity, chat.Summary)
	}
	if !slices.ContainsFunc(chat.Evidence, func(ev Evidence) bool { return strings.HasSuffix(ev.Value, "(c2)") }) {
		t.Errorf("chat's evidence %+v does not name the quiet copy c2", chat.Evidence)
	}
	if !slices.ContainsFunc(e.warnings.list, func(w string) bool {
		return strings.HasPrefix(w, "idle capacity: no price for ml.x.large in us-east-1")
	}) {
		t.Errorf("warnings %v, want the unpriced type", e.warnings.list)
	}
}

// TestIdleCutAnswerIsAnError: when the holders' answer reaches the series limit (it may be
// cut), the rule fails with the cut named instead of judging shares with missing holders;
// one series below the limit, it runs.
func TestIdleCutAnswerIsAnError(t *testing.T) {
	fleet := idleFleet{holders: []idleHolder{
		{endpoint: "big", host: "h1", typ: "ml.p4d.24xlarge", ic: "ic", copy: "c1", gpus: 2, output: 1e6},
		{endpoint: "big", host: "h1", typ: "ml.p4d.24xlarge", gpus: 6},
		{endpoint: "big", host: "h2", typ: "ml.p4d.24xlarge", gpus: 8},
	}}
	book := pricing.NewBook([]pricing.Price{{InstanceType: "ml.p4d.24xlarge", USDPerHour: 40}})
	end := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	for _, limit := range []int{len(fleet.holders), len(fleet.holders) + 1} {
		cfg := DefaultConfig()
		cfg.SeriesLimit = limit
		e := &env{q: newMemoQuerier(fleet), prices: func(typ string) (pricing.Price, error) { return book.Lookup("us-east-1", typ) }, region: "us-east-1",
			start: end.Add(-3 * time.Hour), end: end, cfg: cfg, warnings: &warnings{seen: map[string]bool{}}}
		e.step, e.window = stepFor(3*time.Hour, e.cfg)
		fs, err := runIdle(context.Background(), e)
		var cut *cost.TruncatedError
		if cutAt := limit == len(fleet.holders); cutAt != errors.As(err, &cut) || !cutAt && len(fs) != 1 {
			t.Errorf("limit %d, %d holder series: findings %+v, error %v; want the cut as the error: %v", limit, len(fleet.holders), fs, err, cutAt)
		}
	}
}
