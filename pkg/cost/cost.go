// Package cost is the arithmetic of what a fleet costs, pure: GPU series over time
// (who holds which GPU of which instance) and token counts, priced by a pricing.Book.
// An instance's hourly price is apportioned to the copies on it by their share of its
// GPUs; GPUs no copy holds are idle, and so are copies whose traffic is near zero. Every
// result carries its inputs (price, hours, tokens), so it can be checked by hand, and a
// price the book lacks leaves its results missing with the gap's message, never zero.
package cost

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// GPUs is one group of GPUs over time: how many GPUs of one instance one copy holds
// (Copy "" = GPUs no copy holds), sampled on the query's step grid.
type GPUs struct {
	Account, Endpoint, Host, InstanceType string
	IC, Copy                              string  // IC "" on single-model endpoints
	T                                     []int64 // Unix ms, ascending
	N                                     []float64
}

// Tokens are a copy's input and output tokens over the range.
type Tokens struct {
	Account, Endpoint, IC, Copy, Model string
	Input, Output                      float64
}

// Prices answers a region's hourly price of an instance type (*pricing.Book).
type Prices interface {
	Lookup(region, instanceType string) (pricing.Price, error)
}

// Input is one region's data over a range [From, To).
type Input struct {
	Region   string
	From, To time.Time
	Step     time.Duration // the GPU series' step; a sample stands for [t, t+Step)
	GPUs     []GPUs
	// Instances are each instance's distinct GPUs over time (IC and Copy ""): the
	// denominator of a holder's share, whatever holders GPUs narrows to.
	Instances []GPUs
	// NoGPULabel are the instances whose DCGM series lack the gpu label (N 1 at the steps
	// they do): their GPUs can only be counted as their holders' series.
	NoGPULabel []GPUs
	// Narrowed: GPUs and Tokens are some holders' only (a component filter), so what the
	// holders hold is not an instance's total.
	Narrowed bool
	Tokens   []Tokens
	Prices   Prices
	// Tags are the values of the tag key the rows are grouped by, per resource (TagOf).
	Tags map[Resource]string
	// QuietTokensPerHour: a copy serving fewer output tokens per hour of its life than this
	// counts as idle.
	QuietTokensPerHour float64
}

// Line is the spend of one holder of GPUs on one instance type: a copy, or (Copy "") the
// GPUs no copy holds.
type Line struct {
	Region, Account, Endpoint, InstanceType, IC, Copy string
	Price                                             pricing.Price
	Gap                                               error   // the price is missing: Spend is NaN
	Hours                                             float64 // how long the holder held GPUs
	InstanceHours                                     float64 // instance-hours apportioned by GPU share
	GPUHours                                          float64
	Spend                                             float64 // USD: InstanceHours × Price
}

// priceOf is the region's price of typ. GPU series without an instance type cannot be
// priced: the gap names the missing label rather than a price to add.
func priceOf(in Input, typ string) (pricing.Price, error) {
	if typ == "" {
		return pricing.Price{}, fmt.Errorf("GPUs without an instance type in %s: their %s series lack the %s label, so no price applies", in.Region, sc.DCGMGPUUtil, sc.LabelHostType)
	}
	return in.Prices.Lookup(in.Region, typ)
}

// hostStep is one instance at one step.
type hostStep struct {
	host string
	t    int64
}

// instanceGPUs is each instance's GPUs per step before To: distinct are its distinct GPUs
// (in.Instances), held what its holders (in.GPUs) hold.
func instanceGPUs(in Input) (distinct, held map[hostStep]float64) {
	to := in.To.UnixMilli()
	distinct, held = map[hostStep]float64{}, map[hostStep]float64{}
	for _, set := range []struct {
		gs  []GPUs
		sum map[hostStep]float64
	}{{in.Instances, distinct}, {in.GPUs, held}} {
		for _, g := range set.gs {
			for i, t := range g.T {
				if t < to {
					set.sum[hostStep{g.Host, t}] += g.N[i]
				}
			}
		}
	}
	return distinct, held
}

// unlabelled are the instances of in.NoGPULabel whose GPUs in cannot count: the holders'
// series stand for them only when GPUs holds every holder (no component filter).
func unlabelled(in Input) map[string]bool {
	out := map[string]bool{}
	if !in.Narrowed {
		return out
	}
	for _, g := range in.NoGPULabel {
		out[g.Host] = true
	}
	return out
}

// noGPULabelError is the gap of a holder on such an instance: its share is unknown.
type noGPULabelError struct{ host string }

func (e noGPULabelError) Error() string {
	return fmt.Sprintf("the %s series of instance %s lack the %s label, so its GPUs are counted as series, and filtered by inference component "+
		"only that component's series are read: its share of the instance is unknown; clear the component filter, or have the DCGM exporter "+
		"keep the %s label", sc.DCGMGPUUtil, e.host, sc.LabelGPU, sc.LabelGPU)
}

// Free reports whether the line is GPUs no copy holds.
func (l Line) Free() bool { return l.Copy == "" }

// Lines prices every GPU group of in, merged per (account, endpoint, type, IC, copy), in a
// stable order. A sample at or past To is not counted. A holder on an instance whose GPUs
// cannot be counted (unlabelled) has a gap and no instance-hours.
func Lines(in Input) []Line {
	noLabel := unlabelled(in)
	to := in.To.UnixMilli()
	hours := in.Step.Hours()
	// The denominator of a share: the instance's distinct GPUs, or what its holders hold
	// where that is more (two holders' samples of one GPU at the same instant), so that
	// shares never add up past the instance.
	total, held := instanceGPUs(in)
	for k, n := range held {
		total[k] = max(total[k], n)
	}
	type key struct{ account, endpoint, typ, ic, copy string }
	lines := map[key]*Line{}
	for _, g := range in.GPUs {
		k := key{g.Account, g.Endpoint, g.InstanceType, g.IC, g.Copy}
		l := lines[k]
		if l == nil {
			l = &Line{Region: in.Region, Account: g.Account, Endpoint: g.Endpoint, InstanceType: g.InstanceType, IC: g.IC, Copy: g.Copy}
			l.Price, l.Gap = priceOf(in, g.InstanceType)
			lines[k] = l
		}
		if noLabel[g.Host] {
			l.Gap = noGPULabelError{g.Host} // before a missing price: with one, the spend is still unknown
		}
		for i, t := range g.T {
			if t >= to || g.N[i] <= 0 {
				continue
			}
			l.Hours += hours
			l.GPUHours += g.N[i] * hours
			l.InstanceHours += g.N[i] / total[hostStep{g.Host, t}] * hours
		}
	}
	out := make([]Line, 0, len(lines))
	for _, l := range lines {
		l.Spend = l.InstanceHours * l.Price.USDPerHour
		if l.Gap != nil {
			l.Spend = math.NaN()
		}
		if _, ok := l.Gap.(noGPULabelError); ok {
			l.InstanceHours = math.NaN()
		}
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b Line) int {
		return cmp.Or(strings.Compare(a.Account, b.Account), strings.Compare(a.Endpoint, b.Endpoint), strings.Compare(a.IC, b.IC),
			strings.Compare(a.InstanceType, b.InstanceType), strings.Compare(a.Copy, b.Copy))
	})
	return out
}

// Spend is the spend of one endpoint or IC on one instance type, summed over its lines.
type Spend struct {
	Region, Account, Endpoint, IC, InstanceType string
	Price                                       pricing.Price
	Gap                                         error
	InstanceHours, GPUHours, Spend              float64
	IdleSpend                                   float64 // the part no copy holds (an endpoint's row only)
}

// ByEndpoint sums the lines per (account, endpoint, type): the instances' whole spend.
func ByEndpoint(lines []Line) []Spend {
	return group(lines, func(l Line) string { return "" }, func(s *Spend, l Line) {
		if l.Free() {
			s.IdleSpend += l.Spend
		}
	})
}

// ByIC sums the lines of copies per (account, endpoint, IC, type); free GPUs are left out.
func ByIC(lines []Line) []Spend {
	held := slices.DeleteFunc(slices.Clone(lines), Line.Free)
	return group(held, func(l Line) string { return l.IC }, nil)
}

func group(lines []Line, ic func(Line) string, also func(*Spend, Line)) []Spend {
	var out []Spend
	index := map[[4]string]int{}
	for _, l := range lines {
		k := [4]string{l.Account, l.Endpoint, ic(l), l.InstanceType}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Spend{Region: l.Region, Account: l.Account, Endpoint: l.Endpoint, IC: ic(l), InstanceType: l.InstanceType, Price: l.Price, Gap: l.Gap})
		}
		s := &out[i]
		s.InstanceHours += l.InstanceHours
		s.GPUHours += l.GPUHours
		s.Spend += l.Spend
		if also != nil {
			also(s, l)
		}
	}
	return out
}

// ModelCost is what one model costs on one endpoint or IC per token.
type ModelCost struct {
	Region, Account, Endpoint, IC, Model string
	InstanceTypes                        []string
	Gap                                  error // a price or the GPU series is missing: Spend and the per-token costs are NaN
	InstanceHours, Spend                 float64
	Input, Output                        float64 // tokens; NaN when no engine counted them (DJL)
	PerMillionOutput, PerMillionInput    float64 // USD; NaN without tokens
}

// PerModel is the spend of each endpoint's or IC's copies (free GPUs are left out: they are
// idle spend) over its tokens, costliest per output token first (SortCostliestPerToken).
// Tokens of copies no GPU series shows leave the row's spend missing, with a gap saying so.
func PerModel(in Input, lines []Line) []ModelCost {
	type key struct{ account, endpoint, ic string }
	rows := map[key]*ModelCost{}
	held := map[key]bool{}    // some GPU series shows the row's copies
	counted := map[key]bool{} // some engine counted the row's tokens
	at := func(k key) *ModelCost {
		if rows[k] == nil {
			rows[k] = &ModelCost{Region: in.Region, Account: k.account, Endpoint: k.endpoint, IC: k.ic}
		}
		return rows[k]
	}
	for _, l := range lines {
		if l.Free() {
			continue
		}
		k := key{l.Account, l.Endpoint, l.IC}
		held[k] = true
		r := at(k)
		r.InstanceHours += l.InstanceHours
		r.Spend += l.Spend
		if l.Gap != nil && r.Gap == nil {
			r.Gap = l.Gap
		}
		if !slices.Contains(r.InstanceTypes, l.InstanceType) {
			r.InstanceTypes = append(r.InstanceTypes, l.InstanceType)
		}
	}
	for _, t := range in.Tokens {
		k := key{t.Account, t.Endpoint, t.IC}
		counted[k] = true
		r := at(k)
		r.Input += t.Input
		r.Output += t.Output
		if r.Model == "" {
			r.Model = t.Model
		}
	}
	out := make([]ModelCost, 0, len(rows))
	for _, k := range slices.SortedFunc(maps.Keys(rows), func(a, b key) int {
		return cmp.Or(strings.Compare(a.account, b.account), strings.Compare(a.endpoint, b.endpoint), strings.Compare(a.ic, b.ic))
	}) {
		r := rows[k]
		if !held[k] {
			r.Gap = noGPUs(k.endpoint, k.ic)
		}
		if r.Gap != nil {
			r.Spend = math.NaN()
		}
		if !counted[k] {
			// Its engine exports no token counters: the count is unknown, not zero.
			r.Input, r.Output = math.NaN(), math.NaN()
		}
		r.PerMillionOutput, r.PerMillionInput = perMillion(r.Spend, r.Output), perMillion(r.Spend, r.Input)
		slices.Sort(r.InstanceTypes)
		out = append(out, *r)
	}
	SortCostliestPerToken(out)
	return out
}

// SortCostliestPerToken orders rows as the tokens panel shows them: the highest USD per 1M
// output tokens first, then (rows without one) the highest spend; missing values last, and
// equal rows in their order.
func SortCostliestPerToken(rows []ModelCost) {
	slices.SortStableFunc(rows, func(a, b ModelCost) int {
		return cmp.Or(cmpSpend(b.PerMillionOutput, a.PerMillionOutput), cmpSpend(b.Spend, a.Spend))
	})
}

// noGPUs is the gap of a model whose tokens no GPU series accounts for: what its copies
// held, and so its spend, is unknown.
func noGPUs(endpoint, ic string) error {
	scope := "endpoint " + endpoint
	if ic != "" {
		scope = "IC " + ic + " on " + scope
	}
	return fmt.Errorf("no GPUs of %s in the range: its copies served tokens but no %s series shows them, so its spend is unknown; "+
		"check that its instances export the DCGM GPU metrics with the copies' inference component and container id", scope, sc.DCGMGPUUtil)
}

func perMillion(spend, tokens float64) float64 {
	if !(tokens > 0) {
		return math.NaN()
	}
	return spend / tokens * 1e6
}

// Idle kinds.
const (
	IdleNoCopy = "GPUs with no copy"
	IdleQuiet  = "copy with near-zero traffic"
)

// IdleSpend is spend that serves nothing: an instance type's GPUs no copy holds on an
// endpoint, or one copy whose engine counts tokens serving fewer output tokens per hour
// than the threshold.
type IdleSpend struct {
	Region, Account, Endpoint, IC, Copy, InstanceType, Kind string
	Price                                                   pricing.Price
	Gap                                                     error
	GPUHours, InstanceHours, Spend                          float64
	OutputTokens                                            float64 // the copy's, for IdleQuiet
	PerDay                                                  float64 // Spend over the range's days
}

// Idle lists the idle spend of the lines, costliest first.
func Idle(in Input, lines []Line) []IdleSpend {
	output := map[[4]string]float64{}
	for _, t := range in.Tokens {
		output[[4]string{t.Account, t.Endpoint, t.IC, t.Copy}] += t.Output
	}
	days := in.To.Sub(in.From).Hours() / 24
	var out []IdleSpend
	for _, l := range lines {
		kind, tokens := IdleNoCopy, 0.0
		if !l.Free() {
			// A copy without token counters (DJL) says nothing about its traffic: not judged.
			var counted bool
			tokens, counted = output[[4]string{l.Account, l.Endpoint, l.IC, l.Copy}]
			if !counted || l.Hours <= 0 || tokens/l.Hours >= in.QuietTokensPerHour {
				continue
			}
			kind = IdleQuiet
		}
		if l.GPUHours <= 0 {
			continue
		}
		out = append(out, IdleSpend{Region: l.Region, Account: l.Account, Endpoint: l.Endpoint, IC: l.IC, Copy: l.Copy, InstanceType: l.InstanceType,
			Kind: kind, Price: l.Price, Gap: l.Gap, GPUHours: l.GPUHours, InstanceHours: l.InstanceHours, Spend: l.Spend,
			OutputTokens: tokens, PerDay: l.Spend / days})
	}
	slices.SortStableFunc(out, func(a, b IdleSpend) int { return cmpSpend(b.Spend, a.Spend) })
	return out
}

// cmpSpend orders spends with missing (NaN) ones last in a descending sort.
func cmpSpend(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return -1
	case math.IsNaN(b):
		return 1
	}
	return cmp.Compare(a, b)
}

// TypePrice is the price of an instance type the fleet runs, with its GPUs per instance
// (the most distinct GPUs any of its instances reported; 0 when they cannot be counted,
// with a gap saying why).
type TypePrice struct {
	Region, InstanceType string
	GPUs                 int
	Price                pricing.Price
	Gap                  error
}

// TypePrices lists the instance types of in's GPU series (the instances in.GPUs shows
// holders on) with their prices.
func TypePrices(in Input) []TypePrice {
	typeOf := map[string]string{} // host → type
	for _, g := range in.GPUs {
		typeOf[g.Host] = g.InstanceType
	}
	// Distinct GPUs where the instance's series have gpu labels (two holders' samples of one
	// GPU at one instant are still one GPU); without (in.NoGPULabel), what the holders hold.
	distinct, held := instanceGPUs(in)
	gpus, gaps := map[string]int{}, map[string]error{}
	noLabel := unlabelled(in)
	for k, n := range held {
		typ := typeOf[k.host]
		if d := distinct[k]; d > 0 {
			n = d
		}
		gpus[typ] = max(gpus[typ], int(n))
		if noLabel[k.host] {
			gaps[typ] = noGPULabelError{k.host}
		}
	}
	out := make([]TypePrice, 0, len(gpus))
	for _, typ := range slices.Sorted(maps.Keys(gpus)) {
		if gpus[typ] == 0 {
			continue
		}
		p := TypePrice{Region: in.Region, InstanceType: typ, GPUs: gpus[typ]}
		p.Price, p.Gap = priceOf(in, typ)
		if gaps[typ] != nil {
			// A component's series are not its instances' GPUs: unknown, not that count.
			p.GPUs, p.Gap = 0, gaps[typ]
		}
		out = append(out, p)
	}
	return out
}
