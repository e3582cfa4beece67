package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// A generated fleet's timeline: instances launched and terminated, copies placed and
// removed on them, one price list. The expected costs are worked out from the timeline
// itself (lifetimes × prices), not from series, so they check Lines end to end.
type genType struct {
	name string
	gpus int
}

type genCopy struct {
	ic, id      string
	gpus        int
	from, until int // steps
	output      float64
}

type genInstance struct {
	endpoint, host string
	typ            genType
	from, until    int
	copies         []genCopy
}

var genTypes = []genType{{"ml.g5.2xlarge", 1}, {"ml.g5.12xlarge", 4}, {"ml.g6e.12xlarge", 4}, {"ml.p4d.24xlarge", 8}}

const (
	genSteps = 180
	genStep  = time.Minute
	region   = "us-east-1"
)

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func generate(seed uint64) ([]genInstance, map[string]float64) {
	r := rand.New(rand.NewPCG(seed, 28))
	prices := map[string]float64{}
	for _, t := range genTypes {
		prices[t.name] = math.Round((0.5+40*r.Float64())*1000) / 1000
	}
	var out []genInstance
	for e := range 1 + r.IntN(3) {
		ep := fmt.Sprintf("ep-%d", e)
		typ := genTypes[r.IntN(len(genTypes))]
		for i := range 1 + r.IntN(4) {
			in := genInstance{endpoint: ep, host: fmt.Sprintf("i-%d-%d", e, i), typ: typ}
			in.from = r.IntN(genSteps / 2)
			in.until = in.from + 1 + r.IntN(genSteps-in.from) // a scale-in before the end, or none
			// Copies on GPUs in order; each copy one or two GPUs, its own life inside the instance's.
			for g := 0; g+1 <= typ.gpus; {
				n := min(1+r.IntN(2), typ.gpus-g)
				if r.IntN(4) == 0 { // leave GPUs free
					g += n
					continue
				}
				c := genCopy{ic: fmt.Sprintf("%s-ic%d", ep, r.IntN(2)), id: fmt.Sprintf("%s-c%d", in.host, g), gpus: n}
				c.from = in.from + r.IntN(in.until-in.from)
				c.until = c.from + 1 + r.IntN(in.until-c.from)
				c.output = float64(r.IntN(3)) * 1e5 * r.Float64()
				in.copies = append(in.copies, c)
				g += n
			}
			out = append(out, in)
		}
	}
	return out, prices
}

// instances are each instance's distinct GPUs while it lives, as the Instances query
// returns them.
func instances(fleet []genInstance) []GPUs {
	var out []GPUs
	for _, in := range fleet {
		g := GPUs{Account: "111122223333", Endpoint: in.endpoint, Host: in.host, InstanceType: in.typ.name}
		for s := in.from; s < in.until; s++ {
			g.T, g.N = append(g.T, t0.Add(time.Duration(s)*genStep).UnixMilli()), append(g.N, float64(in.typ.gpus))
		}
		out = append(out, g)
	}
	return out
}

// series are the GPU groups the cost query's PromQL returns for the timeline: per copy
// its GPUs while it lives, per instance its free GPUs at the steps it has any.
func series(fleet []genInstance) ([]GPUs, []Tokens) {
	var gs []GPUs
	var ts []Tokens
	for _, in := range fleet {
		free := GPUs{Account: "111122223333", Endpoint: in.endpoint, Host: in.host, InstanceType: in.typ.name}
		for s := in.from; s < in.until; s++ {
			n := in.typ.gpus
			for _, c := range in.copies {
				if s >= c.from && s < c.until {
					n -= c.gpus
				}
			}
			if n > 0 {
				free.T, free.N = append(free.T, t0.Add(time.Duration(s)*genStep).UnixMilli()), append(free.N, float64(n))
			}
		}
		if len(free.T) > 0 {
			gs = append(gs, free)
		}
		for _, c := range in.copies {
			g := GPUs{Account: "111122223333", Endpoint: in.endpoint, Host: in.host, InstanceType: in.typ.name, IC: c.ic, Copy: c.id}
			for s := c.from; s < c.until; s++ {
				g.T, g.N = append(g.T, t0.Add(time.Duration(s)*genStep).UnixMilli()), append(g.N, float64(c.gpus))
			}
			gs = append(gs, g)
			ts = append(ts, Tokens{Account: "111122223333", Endpoint: in.endpoint, IC: c.ic, Copy: c.id, Model: "m-" + c.ic, Output: c.output, Input: 3 * c.output})
		}
	}
	return gs, ts
}

func book(prices map[string]float64, skip string) *pricing.Book {
	b := pricing.NewBook(nil)
	var list []pricing.Price
	for typ, usd := range prices {
		if typ != skip {
			list = append(list, pricing.Price{Region: region, InstanceType: typ, USDPerHour: usd, Source: pricing.SourceList})
		}
	}
	b.AddList(region, list, nil)
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestLinesEqualAHandComputation: for fixed seeds, the spend per endpoint and per IC, the
// idle spend and the cost per million tokens equal what the timeline gives by hand.
func TestLinesEqualAHandComputation(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		fleet, prices := generate(seed)
		gs, ts := series(fleet)
		in := Input{Region: region, From: t0, To: t0.Add(genSteps * genStep), Step: genStep, GPUs: gs, Tokens: ts, Prices: book(prices, "")}
		lines := Lines(in)

		h := genStep.Hours()
		wantEP, wantIdle, wantIC, wantOut := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
		for _, inst := range fleet {
			p := prices[inst.typ.name]
			wantEP[inst.endpoint] += float64(inst.until-inst.from) * h * p
			held := 0.0
			for _, c := range inst.copies {
				share := float64(c.until-c.from) * h * float64(c.gpus) / float64(inst.typ.gpus) * p
				wantIC[c.ic] += share
				wantOut[c.ic] += c.output
				held += share
			}
			wantIdle[inst.endpoint] += float64(inst.until-inst.from)*h*p - held
		}
		gotEP, gotIdle := map[string]float64{}, map[string]float64{}
		for _, s := range ByEndpoint(lines) {
			gotEP[s.Endpoint] += s.Spend
			gotIdle[s.Endpoint] += s.IdleSpend
			if !near(s.Spend, s.InstanceHours*s.Price.USDPerHour) {
				t.Errorf("seed %d %s: spend %g is not its instance-hours %g × price %g", seed, s.Endpoint, s.Spend, s.InstanceHours, s.Price.USDPerHour)
			}
		}
		for ep, want := range wantEP {
			if !near(gotEP[ep], want) || !near(gotIdle[ep], wantIdle[ep]) {
				t.Errorf("seed %d endpoint %s: spend %g idle %g, by hand %g idle %g", seed, ep, gotEP[ep], gotIdle[ep], want, wantIdle[ep])
			}
		}
		gotIC := map[string]float64{}
		for _, s := range ByIC(lines) {
			gotIC[s.IC] += s.Spend
		}
		for ic, want := range wantIC {
			if !near(gotIC[ic], want) {
				t.Errorf("seed %d IC %s: spend %g, by hand %g", seed, ic, gotIC[ic], want)
			}
		}
		for _, m := range PerModel(in, lines) {
			want := math.NaN()
			if wantOut[m.IC] > 0 {
				want = wantIC[m.IC] / wantOut[m.IC] * 1e6
			}
			if !(near(m.PerMillionOutput, want) || math.IsNaN(want) && math.IsNaN(m.PerMillionOutput)) || !near(m.Input, 3*wantOut[m.IC]) {
				t.Errorf("seed %d IC %s: $/M output %g, by hand %g", seed, m.IC, m.PerMillionOutput, want)
			}
		}
		idle := 0.0
		for _, i := range Idle(in, lines) {
			if i.Kind == IdleNoCopy {
				idle += i.Spend
			}
		}
		total := 0.0
		for _, v := range wantIdle {
			total += v
		}
		if !near(idle, total) {
			t.Errorf("seed %d: idle spend of free GPUs %g, by hand %g", seed, idle, total)
		}
	}
}

// TestMissingPriceIsAGapNotZero: an instance type without a price leaves its spend, its
// endpoint's and its models' costs missing, saying which price is missing.
func TestMissingPriceIsAGapNotZero(t *testing.T) {
	unpricedModels := 0
	for seed := uint64(1); seed <= 10; seed++ {
		fleet, prices := generate(seed)
		gs, ts := series(fleet)
		missing := fleet[0].typ.name
		in := Input{Region: region, From: t0, To: t0.Add(genSteps * genStep), Step: genStep, GPUs: gs, Tokens: ts, Prices: book(prices, missing)}
		lines := Lines(in)
		for _, s := range ByEndpoint(lines) {
			if (s.InstanceType == missing) != math.IsNaN(s.Spend) {
				t.Fatalf("seed %d: %s on %s spends %g", seed, s.Endpoint, s.InstanceType, s.Spend)
			}
			if s.InstanceType == missing && (s.Gap == nil || !strings.HasPrefix(s.Gap.Error(), "no price for "+missing+" in "+region)) {
				t.Fatalf("seed %d: the gap says %v", seed, s.Gap)
			}
			if s.InstanceType == missing && !(s.InstanceHours > 0) {
				t.Fatalf("seed %d: the hours of an unpriced type are lost: %g", seed, s.InstanceHours)
			}
		}
		for _, m := range PerModel(in, lines) {
			if slices.Contains(m.InstanceTypes, missing) {
				unpricedModels++
				if !math.IsNaN(m.Spend) || m.Gap == nil {
					t.Fatalf("seed %d: model row %s on %v spends %g", seed, m.IC, m.InstanceTypes, m.Spend)
				}
			}
		}
	}
	if unpricedModels == 0 {
		t.Fatal("no seed runs a model on the unpriced type: the model rows are not checked")
	}
}

// TestRegionsArePricedByTheirOwnList: the same fleet in two regions costs each region's
// price.
func TestRegionsArePricedByTheirOwnList(t *testing.T) {
	fleet, _ := generate(7)
	gs, _ := series(fleet)
	b := pricing.NewBook(nil)
	for _, r := range []struct {
		region string
		usd    float64
	}{{"us-east-1", 1}, {"eu-west-1", 1.25}} {
		var list []pricing.Price
		for _, typ := range genTypes {
			list = append(list, pricing.Price{Region: r.region, InstanceType: typ.name, USDPerHour: r.usd, Source: pricing.SourceList})
		}
		b.AddList(r.region, list, nil)
	}
	sum := func(region string) float64 {
		total := 0.0
		for _, s := range ByEndpoint(Lines(Input{Region: region, From: t0, To: t0.Add(genSteps * genStep), Step: genStep, GPUs: gs, Prices: b})) {
			total += s.Spend
			if s.Region != region || s.Price.Region != region {
				t.Errorf("row of %s priced in %s", s.Region, s.Price.Region)
			}
		}
		return total
	}
	if us, eu := sum("us-east-1"), sum("eu-west-1"); !(us > 0) || !near(eu/us, 1.25) {
		t.Errorf("us-east-1 %g, eu-west-1 %g: want eu-west-1 at 1.25× us-east-1", us, eu)
	}
}

// TestQuietCopiesAreIdle: a copy serving fewer output tokens an hour than the threshold is
// idle spend; a busier one is not, nor one whose engine counts no tokens.
func TestQuietCopiesAreIdle(t *testing.T) {
	gs := []GPUs{
		{Endpoint: "e", Host: "h", InstanceType: "ml.g5.12xlarge", IC: "busy", Copy: "c1", T: []int64{0, 3600e3}, N: []float64{2, 2}},
		{Endpoint: "e", Host: "h", InstanceType: "ml.g5.12xlarge", IC: "quiet", Copy: "c2", T: []int64{0, 3600e3}, N: []float64{2, 2}},
		{Endpoint: "djl", Host: "h2", InstanceType: "ml.g5.12xlarge", Copy: "c3", T: []int64{0, 3600e3}, N: []float64{4, 4}}, // no token counters
	}
	ts := []Tokens{{Endpoint: "e", IC: "busy", Copy: "c1", Output: 2000}, {Endpoint: "e", IC: "quiet", Copy: "c2", Output: 10}}
	b := pricing.NewBook([]pricing.Price{{InstanceType: "ml.g5.12xlarge", USDPerHour: 8}})
	in := Input{Region: region, From: time.UnixMilli(0), To: time.UnixMilli(2 * 3600e3), Step: time.Hour, GPUs: gs, Tokens: ts, Prices: b, QuietTokensPerHour: 100}
	idle := Idle(in, Lines(in))
	if len(idle) != 1 || idle[0].IC != "quiet" || idle[0].Kind != IdleQuiet || idle[0].Spend != 8 || idle[0].PerDay != 96 || idle[0].OutputTokens != 10 {
		t.Fatalf("idle = %+v, want the quiet copy's half of 2 h × $8 = $8, $96 a day", idle)
	}
}

// TestTokensWithoutGPUsAreNotFree: a model whose copies served tokens while no GPU series
// shows them has an unknown spend and cost per token, said as a gap, never $0.
func TestTokensWithoutGPUsAreNotFree(t *testing.T) {
	gs := []GPUs{{Endpoint: "e", Host: "h", InstanceType: "ml.g5.12xlarge", IC: "seen", Copy: "c1", T: []int64{0}, N: []float64{4}}}
	ts := []Tokens{{Endpoint: "e", IC: "seen", Copy: "c1", Output: 1e6}, {Endpoint: "e", IC: "unseen", Copy: "c2", Model: "m", Output: 1e6, Input: 2e6}}
	b := pricing.NewBook([]pricing.Price{{InstanceType: "ml.g5.12xlarge", USDPerHour: 8}})
	in := Input{Region: region, From: time.UnixMilli(0), To: time.UnixMilli(3600e3), Step: time.Hour, GPUs: gs, Tokens: ts, Prices: b}
	rows := PerModel(in, Lines(in))
	if len(rows) != 2 || rows[0].IC != "seen" || rows[1].IC != "unseen" {
		t.Fatalf("rows %+v, want seen and unseen", rows)
	}
	if seen := rows[0]; seen.Gap != nil || seen.Spend != 8 || seen.PerMillionOutput != 8 {
		t.Errorf("seen: %+v, want 1 h × $8 over 1M tokens", seen)
	}
	unseen := rows[1]
	if !math.IsNaN(unseen.Spend) || !math.IsNaN(unseen.PerMillionOutput) || !math.IsNaN(unseen.PerMillionInput) {
		t.Errorf("unseen: spend %g, $/M output %g, input %g; want all missing", unseen.Spend, unseen.PerMillionOutput, unseen.PerMillionInput)
	}
	if unseen.Gap == nil || !strings.Contains(unseen.Gap.Error(), "IC unseen on endpoint e") || !strings.Contains(unseen.Gap.Error(), "DCGM_FI_DEV_GPU_UTIL") {
		t.Errorf("unseen: gap %v, want one naming the IC and the GPU metric", unseen.Gap)
	}
}

// TestGPUsWithoutAnInstanceType: GPU series without the instance type label are a gap that
// names the label, not a price to add to the table.
func TestGPUsWithoutAnInstanceType(t *testing.T) {
	gs := []GPUs{{Endpoint: "e", Host: "h", IC: "ic", Copy: "c1", T: []int64{0}, N: []float64{1}}}
	in := Input{Region: region, From: time.UnixMilli(0), To: time.UnixMilli(3600e3), Step: time.Hour, GPUs: gs, Prices: pricing.NewBook(nil)}
	lines := Lines(in)
	if len(lines) != 1 || !math.IsNaN(lines[0].Spend) || lines[0].Gap == nil || !strings.Contains(lines[0].Gap.Error(), sc.LabelHostType) {
		t.Fatalf("lines %+v, want one unpriced line whose gap names %s", lines, sc.LabelHostType)
	}
	if tp := TypePrices(in); len(tp) != 1 || tp[0].Gap == nil || !strings.Contains(tp[0].Gap.Error(), sc.LabelHostType) {
		t.Errorf("type prices %+v, want the same gap", tp)
	}
}

// TestComponentFilterKeepsItsShare: read narrowed to one IC's copies (as a component filter
// narrows the GPU and token queries) over the same instances, each IC's spend, hours and
// cost per token equal its row of the whole fleet's: its instances' GPU totals stay whole.
func TestComponentFilterKeepsItsShare(t *testing.T) {
	checked := 0
	for seed := uint64(1); seed <= 20; seed++ {
		fleet, prices := generate(seed)
		gs, ts := series(fleet)
		insts := instances(fleet)
		whole := Input{Region: region, From: t0, To: t0.Add(genSteps * genStep), Step: genStep, GPUs: gs, Instances: insts, Tokens: ts, Prices: book(prices, "")}
		lines := Lines(whole)
		byIC := map[string][]Spend{}
		for _, s := range ByIC(lines) {
			byIC[s.IC] = append(byIC[s.IC], s)
		}
		models := map[string]ModelCost{}
		for _, m := range PerModel(whole, lines) {
			models[m.IC] = m
		}
		for ic, want := range byIC {
			narrowed := whole
			narrowed.GPUs = slices.DeleteFunc(slices.Clone(gs), func(g GPUs) bool { return g.IC != ic })
			narrowed.Tokens = slices.DeleteFunc(slices.Clone(ts), func(t Tokens) bool { return t.IC != ic })
			nl := Lines(narrowed)
			got := ByIC(nl)
			if len(got) != len(want) {
				t.Fatalf("seed %d IC %s: %d rows, want %d", seed, ic, len(got), len(want))
			}
			for i := range got {
				if !near(got[i].Spend, want[i].Spend) || !near(got[i].InstanceHours, want[i].InstanceHours) || !near(got[i].GPUHours, want[i].GPUHours) {
					t.Errorf("seed %d IC %s on %s: filtered %g USD %g instance-h %g GPU-h, whole fleet %g USD %g instance-h %g GPU-h",
						seed, ic, got[i].InstanceType, got[i].Spend, got[i].InstanceHours, got[i].GPUHours, want[i].Spend, want[i].InstanceHours, want[i].GPUHours)
				}
			}
			pm := PerModel(narrowed, nl)
			if len(pm) != 1 || !(near(pm[0].PerMillionOutput, models[ic].PerMillionOutput) || math.IsNaN(models[ic].PerMillionOutput) && math.IsNaN(pm[0].PerMillionOutput)) {
				t.Errorf("seed %d IC %s: per model %+v, whole fleet %+v", seed, ic, pm, models[ic])
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no IC in any seed: nothing checked")
	}
}

// TestGPUsPerInstanceAreDistinctGPUs: when two holders show one GPU at the same instant
// (a copy's series and the free one's, as a handover can leave them), an instance type's
// GPUs per instance are still its distinct GPUs, and each endpoint's spend still its
// instances × price × hours: the holders' shares never add up past the instance.
func TestGPUsPerInstanceAreDistinctGPUs(t *testing.T) {
	doubled := 0
	for seed := uint64(1); seed <= 20; seed++ {
		fleet, prices := generate(seed)
		gs, _ := series(fleet)
		until := map[string]int64{} // host → the end of its life, Unix ms
		for _, inst := range fleet {
			until[inst.host] = t0.Add(time.Duration(inst.until) * genStep).UnixMilli()
		}
		// Every copy that leaves before its instance is still shown, for up to 5 steps, on
		// top of the GPUs that replaced it.
		for i, g := range gs {
			if g.Copy == "" || len(g.T) == 0 {
				continue
			}
			last := g.T[len(g.T)-1]
			for k := int64(1); k <= 5 && last+k*genStep.Milliseconds() < until[g.Host]; k++ {
				gs[i].T, gs[i].N = append(gs[i].T, last+k*genStep.Milliseconds()), append(gs[i].N, g.N[len(g.N)-1])
				doubled++
			}
		}
		in := Input{Region: region, From: t0, To: t0.Add(genSteps * genStep), Step: genStep, GPUs: gs, Instances: instances(fleet), Prices: book(prices, "")}
		want := map[string]int{}
		for _, inst := range fleet {
			want[inst.typ.name] = inst.typ.gpus
		}
		tps := TypePrices(in)
		for _, tp := range tps {
			if tp.GPUs != want[tp.InstanceType] {
				t.Errorf("seed %d: %s has %d GPUs per instance, want %d", seed, tp.InstanceType, tp.GPUs, want[tp.InstanceType])
			}
		}
		if len(tps) != len(want) {
			t.Errorf("seed %d: prices of %d types, want %d", seed, len(tps), len(want))
		}
		spend := map[string]float64{}
		for _, s := range ByEndpoint(Lines(in)) {
			spend[s.Endpoint] += s.Spend
		}
		wantEP := map[string]float64{}
		for _, inst := range fleet {
			wantEP[inst.endpoint] += float64(inst.until-inst.from) * genStep.Hours() * prices[inst.typ.name]
		}
		for ep, w := range wantEP {
			if !near(spend[ep], w) {
				t.Errorf("seed %d endpoint %s: spend %g, want %g", seed, ep, spend[ep], w)
			}
		}
	}
	if doubled == 0 {
		t.Fatal("no copy lingers in any seed: nothing checked")
	}
}

// TestTokensOfDJLAreUnknown: a model whose engine counts no tokens (DJL) has its spend, and
// its tokens and cost per token unknown (NaN), not zero; a counter that counted zero is zero.
func TestTokensOfDJLAreUnknown(t *testing.T) {
	gs := []GPUs{
		{Endpoint: "djl", Host: "h1", InstanceType: "ml.g5.12xlarge", Copy: "c1", T: []int64{0}, N: []float64{4}},
		{Endpoint: "e", Host: "h2", InstanceType: "ml.g5.12xlarge", IC: "idle-ic", Copy: "c2", T: []int64{0}, N: []float64{4}},
	}
	ts := []Tokens{{Endpoint: "e", IC: "idle-ic", Copy: "c2", Model: "m"}} // counted, nothing served
	b := pricing.NewBook([]pricing.Price{{InstanceType: "ml.g5.12xlarge", USDPerHour: 8}})
	in := Input{Region: region, From: time.UnixMilli(0), To: time.UnixMilli(3600e3), Step: time.Hour, GPUs: gs, Tokens: ts, Prices: b}
	rows := PerModel(in, Lines(in))
	if len(rows) != 2 || rows[0].Endpoint != "djl" || rows[1].IC != "idle-ic" {
		t.Fatalf("rows %+v, want djl and idle-ic", rows)
	}
	djl, idle := rows[0], rows[1]
	if djl.Spend != 8 || djl.Gap != nil || !math.IsNaN(djl.Output) || !math.IsNaN(djl.Input) || !math.IsNaN(djl.PerMillionOutput) {
		t.Errorf("djl: %+v, want $8 with unknown tokens and cost per token", djl)
	}
	if idle.Output != 0 || idle.Input != 0 || !math.IsNaN(idle.PerMillionOutput) {
		t.Errorf("idle-ic: %+v, want 0 tokens counted and no cost per token", idle)
	}
}

// TestPerModelCostliestFirst: on generated fleets, the model rows come costliest per output
// token first, the rows without a cost per token after them by spend.
func TestPerModelCostliestFirst(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		fleet, prices := generate(seed)
		gs, ts := series(fleet)
		in := Input{Region: region, From: t0, To: t0.Add(genSteps * genStep), Step: genStep, GPUs: gs, Instances: instances(fleet), Tokens: ts, Prices: book(prices, "")}
		rows := PerModel(in, Lines(in))
		for i := 1; i < len(rows); i++ {
			a, b := rows[i-1], rows[i]
			switch {
			case math.IsNaN(a.PerMillionOutput) && !math.IsNaN(b.PerMillionOutput):
				t.Errorf("seed %d: %s without a cost per token before %s at %g", seed, a.IC, b.IC, b.PerMillionOutput)
			case a.PerMillionOutput < b.PerMillionOutput:
				t.Errorf("seed %d: %s at %g before %s at %g", seed, a.IC, a.PerMillionOutput, b.IC, b.PerMillionOutput)
			case math.IsNaN(a.PerMillionOutput) && math.IsNaN(b.PerMillionOutput) && a.Spend < b.Spend:
				t.Errorf("seed %d: %s spending %g before %s spending %g", seed, a.IC, a.Spend, b.IC, b.Spend)
			}
		}
	}
}
