// Package fleet describes a simulated SageMaker inference fleet: endpoints (single-model or
// inference-component based), their instances, inference components with copies and
// autoscaling bounds, engines, models and the traffic shape. A fleet is read from a small
// YAML file; validation errors name the line, the problem and the fix.
package fleet

import (
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Fleet is what one region holds: by default one account's endpoints; endpoints that name
// their own account are other accounts' endpoints as a monitoring account (CloudWatch
// cross-account observability) sees them.
type Fleet struct {
	Account   string     `yaml:"account"` // the monitoring account, and every endpoint's unless it names its own
	Region    string     `yaml:"region"`
	Models    []Model    `yaml:"models"`
	Endpoints []Endpoint `yaml:"endpoints"`
	// Alarms are CloudWatch PromQL alarms the emulator evaluates; nil means DefaultAlarms.
	Alarms []Alarm `yaml:"alarms,omitempty"`
	// RebalanceMinutes > 0 moves one copy of each IC with an idle slot every that many
	// minutes: it stops on its GPUs and a new copy starts on an idle slot, on another
	// instance where there is one (SageMaker rebalancing, a replaced copy). 0: never.
	RebalanceMinutes int `yaml:"rebalance_minutes,omitempty"`
	// TagFamilies are the series families that carry the "@aws.tag.<Key>" labels of their
	// resource while OTel enrichment is on. CloudWatch documents them on the enriched vended
	// metrics only; whether OTLP-ingested families get them is not documented, so tests
	// choose. Empty means [vended].
	TagFamilies []string `yaml:"tag_families,omitempty"`
}

// Model is what a copy serves. Sizes drive GPU memory and KV capacity; token counts and
// speeds drive the latency model.
type Model struct {
	Name              string  `yaml:"name"`        // id referenced by endpoints and ICs
	ServedName        string  `yaml:"served_name"` // engine model_name label; defaults to Name
	WeightsMiB        int     `yaml:"weights_mib"`
	KVKiBPerToken     float64 `yaml:"kv_kib_per_token"`
	PromptTokens      int     `yaml:"prompt_tokens"`
	OutputTokens      int     `yaml:"output_tokens"`
	ITLMillis         float64 `yaml:"itl_ms"` // decode step time with a batch of one
	PrefillTokensPerS float64 `yaml:"prefill_tokens_per_s"`
	MaxNumSeqs        int     `yaml:"max_num_seqs"` // engine batch cap
}

// Endpoint is either single-model (Model + Engine set) or IC-based (InferenceComponents set).
type Endpoint struct {
	Name                string               `yaml:"name"`
	Account             string               `yaml:"account"` // empty: the fleet's (AccountOf)
	Variant             string               `yaml:"variant"`
	Model               string               `yaml:"model"`
	Engine              string               `yaml:"engine"`
	Instances           []InstanceGroup      `yaml:"instances"`
	InferenceComponents []InferenceComponent `yaml:"inference_components"`
	Traffic             Traffic              `yaml:"traffic"`
	// Tags are the endpoint's resource tags (SageMaker AddTags), Key → Value.
	Tags map[string]string `yaml:"tags,omitempty"`
}

// InstanceGroup is Count identical instances in one AZ.
type InstanceGroup struct {
	Type         string `yaml:"type"`
	AZ           string `yaml:"az"`
	Count        int    `yaml:"count"`
	GPUs         int    `yaml:"gpus"`
	GPUMemoryMiB int    `yaml:"gpu_memory_mib"`
	GPUModel     string `yaml:"gpu_model"`
	MemoryGiB    int    `yaml:"memory_gib"`
}

// InferenceComponent is one model deployed on an IC endpoint with its own copies.
type InferenceComponent struct {
	Name                     string  `yaml:"name"`
	Model                    string  `yaml:"model"`
	Engine                   string  `yaml:"engine"`
	GPUsPerCopy              int     `yaml:"gpus_per_copy"`
	Copies                   int     `yaml:"copies"`
	MinCopies                int     `yaml:"min_copies"`
	MaxCopies                int     `yaml:"max_copies"`
	TargetConcurrencyPerCopy float64 `yaml:"target_concurrency_per_copy"`
	Traffic                  Traffic `yaml:"traffic"`
	// Tags are the component's own resource tags; AWS does not copy the endpoint's.
	Tags map[string]string `yaml:"tags,omitempty"`
}

// Traffic is requests per second shaped by a daily sine wave and seeded bursts.
type Traffic struct {
	BaseRPS          float64 `yaml:"base_rps"`
	DiurnalAmplitude float64 `yaml:"diurnal_amplitude"` // 0..1, fraction of BaseRPS
	PeakHourUTC      int     `yaml:"peak_hour_utc"`
	BurstsPerDay     float64 `yaml:"bursts_per_day"`
	BurstFactor      float64 `yaml:"burst_factor"`
	BurstMinutes     int     `yaml:"burst_minutes"`
}

// Engines the simulator can emit.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
	EngineDJL    = "djl"
)

var engines = []string{EngineVLLM, EngineSGLang, EngineDJL}

// Families that can carry resource tags (Fleet.TagFamilies).
const (
	TagsVended = "vended" // the enriched vended SageMaker metrics
	TagsEngine = "engine" // vLLM, SGLang and DJL series
	TagsDCGM   = "dcgm"
	TagsNode   = "node" // node exporter series
)

var tagFamilies = []string{TagsVended, TagsEngine, TagsDCGM, TagsNode}

// Tagged reports whether series of the family carry resource tags.
func (f *Fleet) Tagged(family string) bool {
	if len(f.TagFamilies) == 0 {
		return family == TagsVended
	}
	return slices.Contains(f.TagFamilies, family)
}

//go:embed default.yaml
var defaultYAML []byte

// Default returns the embedded default fleet: small enough for fast tests, with vLLM, SGLang
// and DJL, an IC endpoint with several ICs and single-model endpoints over three AZs.
func Default() *Fleet {
	f, err := Parse("default.yaml", defaultYAML)
	if err != nil {
		// The embedded file is covered by tests; reaching this is a build defect.
		panic("fleet: embedded default.yaml is invalid: " + err.Error())
	}
	return f
}

// ModelByName returns the model with that id, or nil.
func (f *Fleet) ModelByName(name string) *Model {
	for i := range f.Models {
		if f.Models[i].Name == name {
			return &f.Models[i]
		}
	}
	return nil
}

// IsIC reports whether the endpoint hosts inference components.
func (e *Endpoint) IsIC() bool { return len(e.InferenceComponents) > 0 }

// GPUCount is the endpoint's total number of GPUs.
func (e *Endpoint) GPUCount() int {
	n := 0
	for _, g := range e.Instances {
		n += g.Count * g.GPUs
	}
	return n
}

// InstanceCount is the endpoint's number of instances.
func (e *Endpoint) InstanceCount() int {
	n := 0
	for _, g := range e.Instances {
		n += g.Count
	}
	return n
}

// AccountOf is the account e lives in: its own, else the fleet's (fleets built in code may
// leave it empty).
func (f *Fleet) AccountOf(e *Endpoint) string {
	if e.Account != "" {
		return e.Account
	}
	return f.Account
}

// Accounts returns the distinct accounts of the fleet's endpoints, sorted.
func (f *Fleet) Accounts() []string {
	var out []string
	for i := range f.Endpoints {
		if a := f.AccountOf(&f.Endpoints[i]); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// AZs returns the distinct availability zones of the fleet, sorted.
func (f *Fleet) AZs() []string {
	seen := map[string]bool{}
	for _, e := range f.Endpoints {
		for _, g := range e.Instances {
			seen[g.AZ] = true
		}
	}
	out := make([]string, 0, len(seen))
	for az := range seen {
		out = append(out, az)
	}
	sort.Strings(out)
	return out
}

// applyDefaults fills optional fields so the simulator never sees zero values.
func (f *Fleet) applyDefaults() {
	if f.Region == "" {
		f.Region = "us-east-1"
	}
	if f.Account == "" {
		f.Account = "123456789012"
	}
	for i := range f.Models {
		m := &f.Models[i]
		if m.ServedName == "" {
			m.ServedName = m.Name
		}
		setDefault(&m.PromptTokens, 512)
		setDefault(&m.OutputTokens, 256)
		setDefault(&m.MaxNumSeqs, 256)
		setDefaultF(&m.KVKiBPerToken, 128)
		setDefaultF(&m.ITLMillis, 20)
		setDefaultF(&m.PrefillTokensPerS, 8000)
	}
	for i := range f.Endpoints {
		e := &f.Endpoints[i]
		if e.Variant == "" {
			e.Variant = "AllTraffic"
		}
		for j := range e.Instances {
			g := &e.Instances[j]
			if g.GPUModel == "" {
				g.GPUModel = "NVIDIA GPU"
			}
			setDefault(&g.MemoryGiB, 16*g.GPUs+32)
		}
		e.Traffic.applyDefaults()
		for j := range e.InferenceComponents {
			ic := &e.InferenceComponents[j]
			setDefault(&ic.GPUsPerCopy, 1)
			setDefault(&ic.MinCopies, 1)
			if ic.MaxCopies == 0 {
				ic.MaxCopies = max(ic.Copies, ic.MinCopies)
			}
			setDefaultF(&ic.TargetConcurrencyPerCopy, 8)
			ic.Traffic.applyDefaults()
		}
	}
}

func (t *Traffic) applyDefaults() {
	setDefault(&t.BurstMinutes, 15)
	setDefaultF(&t.BurstFactor, 2)
}

func setDefault(p *int, v int) {
	if *p == 0 {
		*p = v
	}
}

func setDefaultF(p *float64, v float64) {
	if *p == 0 {
		*p = v
	}
}

// Error is one validation problem at a line of the fleet file.
type Error struct {
	File    string
	Line    int
	Path    string // e.g. endpoints[0].inference_components[1].copies
	Problem string
	Fix     string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// Errors is every problem found in one file, in line order.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}
