package diagnosis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/panics"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// How a generated region behaves.
type regionMode int

const (
	modeOK        regionMode = iota
	modeDown                 // every query fails
	modeSetup                // the caller could not build its querier (Region.Err)
	modePanic                // its querier panics
	modeAZFail               // the AZs-in-use query fails
	modeScaleFail            // the scaling events query fails
)

// fakeRegion answers the ICE rule's and the cross-region rule's queries from a generated
// picture of one region, and every other query with no data.
type fakeRegion struct {
	name      string
	mode      regionMode
	azs       []string                  // the region's AZs
	inUse     []string                  // AZs with GPUs of the fleet
	ice       map[string]map[string]int // instance type → AZ → ICE errors (> 0)
	scaleOuts int
	exprs     *env  // the queries' text, built as the rules build it
	err       error // every query's error (modeDown), or Region.Err (modeSetup)
	n         atomic.Int32
}

// call counts a query and fails it the way the region fails every query.
func (f *fakeRegion) call() error {
	f.n.Add(1)
	switch f.mode {
	case modePanic:
		panic("querier of " + f.name + " broke")
	case modeDown:
		return f.err
	}
	return nil
}

func (f *fakeRegion) Instant(_ context.Context, expr string, _ time.Time) (model.Vector, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	switch {
	case expr == f.exprs.iceExpr():
		var v model.Vector
		for it, per := range f.ice {
			for az, n := range per {
				v = append(v, &model.Sample{Metric: model.Metric{lEP: model.LabelValue("ep-" + it), semconv.LabelEventInstanceType: model.LabelValue(it), semconv.LabelEventAZ: model.LabelValue(az)}, Value: model.SampleValue(n)})
			}
		}
		// An AZ reported with no error, and a NaN, are no ICE.
		v = append(v, &model.Sample{Metric: model.Metric{semconv.LabelEventInstanceType: "ml.zero", semconv.LabelEventAZ: model.LabelValue(f.azs[0])}, Value: 0},
			&model.Sample{Metric: model.Metric{semconv.LabelEventInstanceType: "ml.nan", semconv.LabelEventAZ: model.LabelValue(f.azs[0])}, Value: model.SampleValue(math.NaN())})
		return v, nil
	case expr == f.exprs.regionAZExpr():
		if f.mode == modeAZFail {
			return nil, errors.New("AZ query refused in " + f.name)
		}
		var v model.Vector
		for _, az := range f.inUse {
			v = append(v, &model.Sample{Metric: model.Metric{lAZ: model.LabelValue(az)}, Value: 1})
		}
		return v, nil
	}
	return model.Vector{}, nil
}

func (f *fakeRegion) Range(_ context.Context, expr string, start, _ time.Time, step time.Duration) (model.Matrix, error) {
	if err := f.call(); err != nil {
		return nil, err
	}
	switch {
	case expr == f.exprs.scalingEventsExpr():
		if f.mode == modeScaleFail {
			return nil, errors.New("scaling events refused in " + f.name)
		}
		out := model.Matrix{&model.SampleStream{Metric: model.Metric{lEP: "ep", semconv.LabelScalingDirection: semconv.ScaleIn},
			Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(start.Add(step).UnixNano()), Value: 30}}}}
		if f.scaleOuts > 0 {
			s := &model.SampleStream{Metric: model.Metric{lEP: "ep", semconv.LabelScalingDirection: semconv.ScaleOut}}
			for i := range f.scaleOuts {
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(start.Add(time.Duration(3*i+2) * step).UnixNano()), Value: 120})
			}
			out = append(out, s)
		}
		return out, nil
	}
	return model.Matrix{}, nil
}

var iceTypes = []string{"ml.g5.2xlarge", "ml.g6.12xlarge", "ml.p4d.24xlarge"}

// genRegions draws 1–5 regions with 1–4 AZs each, some AZs in use (possibly none), per
// instance type ICE in no AZ, some or all of them, 0–3 scale-outs, and a failure mode.
func genRegions(rng *rand.Rand, exprs *env) []*fakeRegion {
	n := 1 + rng.IntN(5)
	out := make([]*fakeRegion, n)
	for i := range out {
		name := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-south-1", "sa-east-1"}[i]
		f := &fakeRegion{name: name, exprs: exprs, ice: map[string]map[string]int{}, scaleOuts: rng.IntN(4)}
		for a := range 1 + rng.IntN(4) {
			f.azs = append(f.azs, name+string(rune('a'+a)))
		}
		for _, az := range f.azs {
			if rng.IntN(4) > 0 {
				f.inUse = append(f.inUse, az)
			}
		}
		for _, it := range iceTypes {
			var hit []string
			switch rng.IntN(3) {
			case 1: // some AZs
				for _, az := range f.azs {
					if rng.IntN(2) == 0 {
						hit = append(hit, az)
					}
				}
			case 2: // all of them
				hit = f.azs
			}
			for _, az := range hit {
				if f.ice[it] == nil {
					f.ice[it] = map[string]int{}
				}
				f.ice[it][az] = 1 + rng.IntN(40)
			}
		}
		switch r := rng.IntN(20); {
		case r < 12:
			f.mode = modeOK
		default:
			f.mode = regionMode(1 + (r-12)%5)
		}
		f.err = fmt.Errorf("%s failed (mode %d)", name, f.mode)
		out[i] = f
	}
	return out
}

// The expectations below are written from the generated picture, in the rule's own terms
// (README "Cross-region ICE"), not from the code's data structures.

// seen: the region's AZs as the rules can see them: those in use and those with ICE.
func (f *fakeRegion) seen() []string {
	set := map[string]bool{}
	for _, az := range f.inUse {
		set[az] = true
	}
	for _, per := range f.ice {
		for az := range per {
			set[az] = true
		}
	}
	return sortedKeys(set)
}

func (f *fakeRegion) answers() bool {
	return f.mode != modeDown && f.mode != modeSetup && f.mode != modePanic
}

// iceKnown: its ICE could be read (with ICE, the AZ query is part of the reading).
func (f *fakeRegion) iceKnown() bool {
	return f.answers() && (len(f.ice) == 0 || f.mode != modeAZFail)
}

func (f *fakeRegion) capacityKnown() bool {
	return f.iceKnown() && f.mode != modeAZFail && f.mode != modeScaleFail
}

func (f *fakeRegion) exhausted(it string) bool {
	azs := f.seen()
	if len(azs) < 2 {
		return false
	}
	for _, az := range azs {
		if f.ice[it][az] == 0 {
			return false
		}
	}
	return true
}

func (f *fakeRegion) hasCapacity(it string) bool {
	for _, az := range f.seen() {
		if f.ice[it][az] == 0 {
			return true
		}
	}
	return len(f.ice[it]) == 0 && f.scaleOuts > 0
}

// TestRunRegionsGenerated runs RunRegions over generated regions and checks every
// cross-region finding and failure against the picture: which (region, type) pairs get a
// finding, which regions each names as having capacity, its rank above the region's own
// ICE finding, the failures of regions that could not answer, and the request count.
func TestRunRegionsGenerated(t *testing.T) {
	cfg := DefaultConfig()
	exprs := &env{start: runFrom, end: runTo, cfg: cfg}
	exprs.step, exprs.window = stepFor(runTo.Sub(runFrom), cfg)
	findingsSeen, failuresSeen := 0, 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 15))
		fakes := genRegions(rng, exprs)
		regions := make([]Region, len(fakes))
		for i, f := range fakes {
			regions[i] = Region{Name: f.name, Querier: f}
			if f.mode == modeSetup {
				regions[i] = Region{Name: f.name, Err: f.err}
			}
		}
		many := len(fakes) > 1
		anyAnswers := slices.ContainsFunc(fakes, (*fakeRegion).answers)

		r, err := RunRegions(context.Background(), regions, Scope{}, runFrom, runTo, cfg)
		if !slices.ContainsFunc(fakes, func(f *fakeRegion) bool { return f.mode != modeSetup }) {
			if !errors.Is(err, fakes[0].err) || !strings.HasPrefix(err.Error(), "region "+fakes[0].name+": ") {
				t.Fatalf("seed %d: every region failed as a whole: want the first one's error, got %v", seed, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if want := regionNames(fakes); !slices.Equal(r.Regions, want) {
			t.Fatalf("seed %d: regions %v, want %v", seed, r.Regions, want)
		}
		sent := 0
		for _, f := range fakes {
			sent += int(f.n.Load())
		}
		if r.Requests != sent {
			t.Errorf("seed %d: reported %d requests, the regions saw %d", seed, r.Requests, sent)
		}
		if (r.answered > 0) != anyAnswers {
			t.Errorf("seed %d: answered %d, want >0 = %v", seed, r.answered, anyAnswers)
		}

		// Expected cross-region findings and failures.
		want := map[string][]string{} // "region|type" → regions with capacity
		anyExhausted := false
		for _, f := range fakes {
			for _, it := range iceTypes {
				anyExhausted = anyExhausted || (f.iceKnown() && f.exhausted(it))
			}
		}
		var wantFailed []string
		for _, f := range fakes {
			if !many {
				break
			}
			if anyExhausted && f.iceKnown() && !f.capacityKnown() {
				wantFailed = append(wantFailed, f.name)
			}
			for _, it := range iceTypes {
				if !f.iceKnown() || !f.exhausted(it) {
					continue
				}
				for _, s := range fakes {
					if s != f && s.capacityKnown() && s.hasCapacity(it) {
						want[f.name+"|"+it] = append(want[f.name+"|"+it], s.name)
					}
				}
			}
		}
		for k := range want {
			slices.Sort(want[k])
		}

		got := map[string][]string{}
		for i, fd := range r.Findings {
			if fd.Region == "" || fd.PanelLink == "" || !strings.HasSuffix(fd.PanelLink, "&var-region="+fd.Region) {
				t.Fatalf("seed %d: finding %q in %q links to %q, want its panel on its region", seed, fd.Cause, fd.Region, fd.PanelLink)
			}
			if fd.Rule != crossRegionRuleID {
				continue
			}
			findingsSeen++
			it := fd.Target.Name
			var with []string
			for _, ev := range fd.Evidence {
				if s, ok := strings.CutPrefix(ev.What, "capacity in "); ok {
					with = append(with, s)
					if ev.Query == "" {
						t.Errorf("seed %d: evidence %q without its query", seed, ev.What)
					}
				}
			}
			slices.Sort(with)
			got[fd.Region+"|"+it] = with
			if fd.Severity != Critical || !strings.Contains(fd.Summary, fd.Region) || !strings.Contains(fd.Summary, it) || !strings.Contains(fd.Next, "Shift traffic to ") {
				t.Errorf("seed %d: finding %+v", seed, fd)
			}
			for _, s := range with {
				if !strings.Contains(fd.Summary, s) {
					t.Errorf("seed %d: summary %q does not name %s", seed, fd.Summary, s)
				}
			}
			own := slices.IndexFunc(r.Findings, func(o Finding) bool {
				return o.Rule == iceRuleID && o.Region == fd.Region && o.Target.Name == it
			})
			if own < 0 || own < i {
				t.Errorf("seed %d: %s's own ICE finding for %s at %d, want after the cross-region one at %d", seed, fd.Region, it, own, i)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("seed %d: cross-region findings %v, want %v", seed, got, want)
		}

		var failed []string
		for _, f := range r.Failures {
			if f.Region == "" {
				t.Fatalf("seed %d: failure of rule %q without its region", seed, f.Rule)
			}
			if f.Rule == crossRegionRuleID {
				failed = append(failed, f.Region)
				failuresSeen++
			}
		}
		sort.Strings(failed)
		sort.Strings(wantFailed)
		if !slices.Equal(failed, wantFailed) {
			t.Errorf("seed %d: cross-region failures in %v, want %v", seed, failed, wantFailed)
		}
		checkDeadRegions(t, seed, r, fakes, many)
	}
	// The generator must reach the cases it is for.
	if findingsSeen < 20 || failuresSeen < 5 {
		t.Fatalf("only %d cross-region findings and %d failures in 300 cases: the generator misses them", findingsSeen, failuresSeen)
	}
}

// checkDeadRegions: among several regions, one that answers nothing is one row naming it
// (with the panic, the setup error or the upstream's error), not a row per rule.
func checkDeadRegions(t *testing.T, seed uint64, r Report, fakes []*fakeRegion, many bool) {
	t.Helper()
	for _, f := range fakes {
		var rows []RuleFailure
		for _, x := range r.Failures {
			if x.Region == f.name && x.Rule != crossRegionRuleID {
				rows = append(rows, x)
			}
		}
		switch {
		case f.answers():
		case many || f.mode == modeSetup:
			if len(rows) != 1 || rows[0].Rule != "" || !f.failedAs(rows[0].Err) {
				t.Errorf("seed %d: %s (mode %d) failed as %+v, want one region failure with its own error", seed, f.name, f.mode, rows)
			}
		default: // one region alone: each rule's failure, as Run reports it
			if len(rows) != querying(runnable(allRules, false)) {
				t.Errorf("seed %d: %d failures, want one per rule", seed, len(rows))
			}
		}
	}
}

// failedAs: err is the region's own failure, its error or its querier's panic.
func (f *fakeRegion) failedAs(err error) bool {
	var p *panics.Error
	if f.mode == modePanic {
		return errors.As(err, &p) && p.Value == "querier of "+f.name+" broke"
	}
	return errors.Is(err, f.err)
}

func regionNames(fs []*fakeRegion) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

// TestOneUnnamedRegionIsRun: a query that names no region gets the report and frame Run
// gives, column for column, so single-region frames carry no region columns.
func TestOneUnnamedRegionIsRun(t *testing.T) {
	cfg := DefaultConfig()
	exprs := &env{start: runFrom, end: runTo, cfg: cfg}
	exprs.step, exprs.window = stepFor(runTo.Sub(runFrom), cfg)
	for seed := range uint64(20) {
		f := genRegions(rand.New(rand.NewPCG(seed, 16)), exprs)[0]
		if !f.answers() {
			continue
		}
		f.name = ""
		run, err := Run(context.Background(), f, Scope{}, runFrom, runTo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		regions, err := RunRegions(context.Background(), []Region{{Querier: f}}, Scope{}, runFrom, runTo, cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := Frame(run).MarshalJSON()
		b, _ := Frame(regions).MarshalJSON()
		if string(a) != string(b) {
			t.Fatalf("seed %d: frames differ:\n%s\n%s", seed, a, b)
		}
		if fmt.Sprintf("%+v", run) != fmt.Sprintf("%+v", withoutAnswered(regions)) {
			t.Fatalf("seed %d: reports differ:\n%+v\n%+v", seed, run, regions)
		}
	}
}

func withoutAnswered(r Report) Report { r.answered = 0; return r }

// TestFrameRegions: named regions add a region column; several regions also name the region
// in the cause and the summary, and a region that failed as a whole is one row naming it.
func TestFrameRegions(t *testing.T) {
	kv := Finding{Rule: "kv-cache-saturation", Region: "us-west-2", Cause: "KV cache saturation", Severity: Critical, Summary: "KV at 97%", Target: Target{Level: LevelIC, Name: "ic", Endpoint: "ep"}}
	ruleFailed := RuleFailure{Rule: "gpu-memory", Region: "us-west-2", Error: "throttled"}
	regionFailed := RuleFailure{Region: "eu-west-1", Error: "unreachable"}
	cases := []struct {
		name     string
		report   Report
		columns  string
		rows     [][]string // cause, region, summary of each row
		noticeOf string     // a failure's notice
	}{
		{"one named region", Report{Regions: []string{"us-west-2"}, Findings: []Finding{kv}, Failures: []RuleFailure{ruleFailed}},
			"rank severity cause region scope summary evidence next step link",
			[][]string{{"KV cache saturation", "us-west-2", "KV at 97%"}, {"Rule gpu-memory could not be evaluated", "us-west-2", "throttled"}},
			"rule gpu-memory could not be evaluated"},
		{"several regions", Report{Regions: []string{"us-west-2", "eu-west-1"}, Findings: []Finding{kv}, Failures: []RuleFailure{ruleFailed, regionFailed}},
			"rank severity cause region scope summary evidence next step link",
			[][]string{{"KV cache saturation (us-west-2)", "us-west-2", "us-west-2: KV at 97%"},
				{"Rule gpu-memory could not be evaluated in us-west-2", "us-west-2", "throttled"},
				{"Region eu-west-1 could not be evaluated", "eu-west-1", "unreachable"}},
			"region eu-west-1 could not be evaluated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fr := Frame(c.report)
			var cols []string
			for _, f := range fr.Fields {
				cols = append(cols, f.Name)
			}
			if strings.Join(cols, " ") != c.columns {
				t.Fatalf("columns %v, want %s", cols, c.columns)
			}
			at := func(col string, i int) string { f, _ := fr.FieldByName(col); return f.At(i).(string) }
			for i, want := range c.rows {
				if got := []string{at("cause", i), at("region", i), at("summary", i)}; !slices.Equal(got, want) {
					t.Errorf("row %d: %q, want %q", i, got, want)
				}
			}
			if c := fr.Fields[2].Config; c == nil || len(c.Links) != 1 || fr.Fields[2].Name != "cause" {
				t.Errorf("the cause column must keep its panel link: %+v", c)
			}
			last := c.report.Failures[len(c.report.Failures)-1]
			if got := last.describe(len(c.report.Regions) > 1); got != c.noticeOf {
				t.Errorf("notice %q, want %q", got, c.noticeOf)
			}
		})
	}
}
