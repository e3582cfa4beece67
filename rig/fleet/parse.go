package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Load reads and validates a fleet file.
func Load(path string) (*Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet file: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and validates a fleet from YAML. name is used in error messages. The error is
// an Errors value listing every problem with its line.
func Parse(name string, data []byte) (*Fleet, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Errors{yamlError(name, err)}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, Errors{{File: name, Line: 1, Problem: "the file is empty", Fix: "start from examples/fleet.yaml"}}
	}
	var f Fleet
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			es := make(Errors, 0, len(te.Errors))
			for _, msg := range te.Errors {
				es = append(es, typeError(name, msg))
			}
			return nil, es
		}
		return nil, Errors{yamlError(name, err)}
	}
	v := &validator{file: name, lines: map[string]int{}}
	v.index("", root.Content[0])
	f.applyDefaults()
	v.fleet(&f)
	if len(v.errs) > 0 {
		sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].Line < v.errs[j].Line })
		return nil, v.errs
	}
	return &f, nil
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

func yamlError(name string, err error) *Error {
	e := typeError(name, err.Error())
	if e.Fix == "" {
		e.Fix = "fix the YAML syntax (indentation, a missing ':' or quote)"
	}
	return e
}

// typeError turns one go-yaml message ("line 7: field foo not found in type ...") into an Error.
func typeError(name, msg string) *Error {
	e := &Error{File: name, Problem: msg}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Problem = m[2]
	}
	switch {
	case strings.Contains(e.Problem, "not found in type"):
		field := strings.TrimPrefix(strings.SplitN(e.Problem, " not found", 2)[0], "field ")
		e.Problem = fmt.Sprintf("unknown field %q", field)
		e.Fix = "check the spelling or remove it (examples/fleet.yaml lists every field)"
	case strings.Contains(e.Problem, "cannot unmarshal"):
		e.Fix = "use the value type the field expects (a number, a string or a list, see examples/fleet.yaml)"
	}
	return e
}

// validator collects errors with the line of the offending path.
type validator struct {
	file  string
	lines map[string]int // path → line of its value node
	errs  Errors
}

func (v *validator) index(path string, n *yaml.Node) {
	v.lines[path] = n.Line
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			v.index(join(path, n.Content[i].Value), n.Content[i+1])
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			v.index(fmt.Sprintf("%s[%d]", path, i), c)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// line is the line of path or of its nearest present ancestor (a missing field is reported
// where its parent starts).
func (v *validator) line(path string) int {
	for p := path; ; {
		if l, ok := v.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return v.lines[""]
		}
		p = p[:i]
	}
}

func (v *validator) add(path, fix, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.file, Line: v.line(path), Path: path, Problem: fmt.Sprintf(format, args...), Fix: fix})
}

var (
	nameRE    = regexp.MustCompile(`^[a-zA-Z0-9](-*[a-zA-Z0-9])*$`)
	accountRE = regexp.MustCompile(`^[0-9]{12}$`)
)

func (v *validator) fleet(f *Fleet) {
	if !accountRE.MatchString(f.Account) {
		v.add("account", "write the 12-digit account id in quotes", "account %q is not 12 digits", f.Account)
	}
	if len(f.Models) == 0 {
		v.add("models", "add at least one model under models:", "no models")
	}
	if len(f.Endpoints) == 0 {
		v.add("endpoints", "add at least one endpoint under endpoints:", "no endpoints")
	}
	models := map[string]bool{}
	for i := range f.Models {
		v.model(fmt.Sprintf("models[%d]", i), &f.Models[i], models)
	}
	endpoints, ics := map[string]bool{}, map[string]bool{}
	for i := range f.Endpoints {
		v.endpoint(f, fmt.Sprintf("endpoints[%d]", i), &f.Endpoints[i], endpoints, ics)
	}
	v.alarms(f)
	for i, fam := range f.TagFamilies {
		if !slices.Contains(tagFamilies, fam) {
			v.add(fmt.Sprintf("tag_families[%d]", i), "use "+strings.Join(tagFamilies, ", ")+" or leave tag_families out for vended only", "unknown tag family %q", fam)
		}
	}
	if f.RebalanceMinutes < 0 {
		v.add("rebalance_minutes", "use 0 (copies stay) or the minutes between moves", "rebalance_minutes %d is negative", f.RebalanceMinutes)
	}
}

func (v *validator) model(p string, m *Model, seen map[string]bool) {
	switch {
	case m.Name == "":
		v.add(p+".name", "give the model an id such as llama-3.1-8b", "model without a name")
	case seen[m.Name]:
		v.add(p+".name", "model ids must be unique", "model %q is defined twice", m.Name)
	}
	seen[m.Name] = true
	v.positive(p+".weights_mib", float64(m.WeightsMiB), "set the size of the weights in MiB (about 2 MiB per billion parameters per byte of precision)")
	v.positive(p+".kv_kib_per_token", m.KVKiBPerToken, "")
	v.positive(p+".prompt_tokens", float64(m.PromptTokens), "")
	v.positive(p+".output_tokens", float64(m.OutputTokens), "")
	v.positive(p+".itl_ms", m.ITLMillis, "")
	v.positive(p+".prefill_tokens_per_s", m.PrefillTokensPerS, "")
	v.positive(p+".max_num_seqs", float64(m.MaxNumSeqs), "")
}

func (v *validator) positive(path string, x float64, fix string) {
	if x <= 0 {
		if fix == "" {
			fix = "use a value above zero or leave the field out for the default"
		}
		v.add(path, fix, "must be greater than zero, got %g", x)
	}
}

func (v *validator) endpoint(f *Fleet, p string, e *Endpoint, seen, ics map[string]bool) {
	before := len(v.errs)
	switch {
	case !nameRE.MatchString(e.Name) || len(e.Name) > 63:
		v.add(p+".name", "use 1-63 letters, digits and hyphens", "endpoint name %q is not a valid SageMaker name", e.Name)
	case seen[e.Name]:
		v.add(p+".name", "endpoint names must be unique", "endpoint %q is defined twice", e.Name)
	}
	seen[e.Name] = true
	if e.Account != "" && !accountRE.MatchString(e.Account) {
		v.add(p+".account", "write the 12-digit account id in quotes, or leave it out for the fleet's account", "account %q is not 12 digits", e.Account)
	}
	v.tags(p+".tags", e.Tags)
	if len(e.Instances) == 0 {
		v.add(p+".instances", "add an instance group (type, az, count, gpus, gpu_memory_mib)", "endpoint %q has no instances", e.Name)
	}
	maxGPUs := 0
	for i := range e.Instances {
		g := &e.Instances[i]
		gp := fmt.Sprintf("%s.instances[%d]", p, i)
		if !strings.HasPrefix(g.Type, "ml.") {
			v.add(gp+".type", "use a SageMaker instance type such as ml.g5.12xlarge", "instance type %q does not start with ml.", g.Type)
		}
		if !strings.HasPrefix(g.AZ, f.Region) || len(g.AZ) <= len(f.Region) {
			v.add(gp+".az", fmt.Sprintf("use a zone of %s such as %sa", f.Region, f.Region), "availability zone %q is not in region %s", g.AZ, f.Region)
		}
		v.positive(gp+".count", float64(g.Count), "")
		v.positive(gp+".gpus", float64(g.GPUs), "set the number of GPUs per instance (for example 4 for ml.g5.12xlarge)")
		v.positive(gp+".gpu_memory_mib", float64(g.GPUMemoryMiB), "set the memory of one GPU in MiB (for example 23028 for an A10G)")
		maxGPUs = max(maxGPUs, g.GPUs)
	}
	v.traffic(p+".traffic", &e.Traffic, !e.IsIC())
	if e.IsIC() {
		if e.Model != "" || e.Engine != "" {
			v.add(p+".model", "remove model/engine from the endpoint; each inference component names its own", "an endpoint with inference_components cannot also set model or engine")
		}
		for i := range e.InferenceComponents {
			v.component(f, e, fmt.Sprintf("%s.inference_components[%d]", p, i), &e.InferenceComponents[i], ics, maxGPUs)
		}
		if len(v.errs) == before {
			if _, err := Place(e); err != nil {
				v.add(p+".inference_components", "lower copies or gpus_per_copy, or add instances", "%v", err)
			}
		}
		return
	}
	v.engineAndModel(f, p, e.Engine, e.Model, maxGPUs, e.Instances)
}

func (v *validator) component(f *Fleet, e *Endpoint, p string, ic *InferenceComponent, seen map[string]bool, maxGPUs int) {
	switch {
	case !nameRE.MatchString(ic.Name) || len(ic.Name) > 63:
		v.add(p+".name", "use 1-63 letters, digits and hyphens", "inference component name %q is not valid", ic.Name)
	case seen[ic.Name]:
		v.add(p+".name", "inference component names must be unique in the account", "inference component %q is defined twice", ic.Name)
	}
	seen[ic.Name] = true
	v.tags(p+".tags", ic.Tags)
	if ic.GPUsPerCopy > maxGPUs {
		v.add(p+".gpus_per_copy", fmt.Sprintf("use at most %d (the largest instance of %s)", maxGPUs, e.Name), "a copy needs %d GPUs but no instance has that many", ic.GPUsPerCopy)
	}
	v.engineAndModel(f, p, ic.Engine, ic.Model, ic.GPUsPerCopy, e.Instances)
	v.positive(p+".copies", float64(ic.Copies), "")
	if ic.MinCopies > ic.Copies || ic.Copies > ic.MaxCopies {
		v.add(p+".copies", "keep min_copies <= copies <= max_copies", "copies %d is outside min_copies %d .. max_copies %d", ic.Copies, ic.MinCopies, ic.MaxCopies)
	}
	v.positive(p+".target_concurrency_per_copy", ic.TargetConcurrencyPerCopy, "")
	v.traffic(p+".traffic", &ic.Traffic, true)
	if need, have := ic.Copies*ic.GPUsPerCopy, e.GPUCount(); need > have {
		v.add(p+".copies", "lower copies or gpus_per_copy, or add instances", "%d copies x %d GPUs need %d GPUs but endpoint %s has %d", ic.Copies, ic.GPUsPerCopy, need, e.Name, have)
	}
}

// engineAndModel checks an engine name and that the model's weights fit on gpus GPUs of the
// smallest instance group.
func (v *validator) engineAndModel(f *Fleet, p, engine, model string, gpus int, groups []InstanceGroup) {
	known := false
	for _, e := range engines {
		known = known || e == engine
	}
	if !known {
		v.add(p+".engine", "use one of "+strings.Join(engines, ", "), "engine %q is not supported", engine)
	}
	m := f.ModelByName(model)
	if m == nil {
		v.add(p+".model", "name a model defined under models:", "model %q is not defined", model)
		return
	}
	for _, g := range groups {
		if g.GPUMemoryMiB <= 0 || g.GPUs < gpus {
			continue
		}
		if usable := gpus * g.GPUMemoryMiB * 9 / 10; m.WeightsMiB > usable {
			v.add(p+".model", "use more GPUs per copy, larger GPUs or a smaller model", "model %q needs %d MiB but %d GPU(s) of %s leave %d MiB", model, m.WeightsMiB, gpus, g.Type, usable)
			return
		}
	}
}

// tags checks AWS's tag limits: keys of 1-128 and values of up to 256 UTF-8 characters, no
// "aws:" prefix. The character set is wider than AWS's on purpose: quotes and other
// characters AWS refuses test that label names and values are escaped wherever they go.
func (v *validator) tags(p string, tags map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		val := tags[k]
		switch {
		case !utf8.ValidString(k) || !utf8.ValidString(val):
			v.add(p, "write keys and values in UTF-8", "tag %q is not valid UTF-8", k)
		case k == "" || utf8.RuneCountInString(k) > 128:
			v.add(p, "use a key of 1 to 128 characters", "tag key %q has %d characters", k, utf8.RuneCountInString(k))
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			v.add(p, "remove the aws: prefix; AWS reserves it", "tag key %q starts with aws:", k)
		case utf8.RuneCountInString(val) > 256:
			v.add(p, "use a value of at most 256 characters", "the value of tag %q has %d characters", k, utf8.RuneCountInString(val))
		}
	}
}

func (v *validator) traffic(p string, t *Traffic, required bool) {
	if required && t.BaseRPS <= 0 {
		v.add(p+".base_rps", "set the mean requests per second, for example base_rps: 2", "base_rps must be greater than zero")
	}
	if t.DiurnalAmplitude < 0 || t.DiurnalAmplitude > 1 {
		v.add(p+".diurnal_amplitude", "use a fraction between 0 and 1", "diurnal_amplitude %g is out of range", t.DiurnalAmplitude)
	}
	if t.PeakHourUTC < 0 || t.PeakHourUTC > 23 {
		v.add(p+".peak_hour_utc", "use an hour from 0 to 23", "peak_hour_utc %d is out of range", t.PeakHourUTC)
	}
	if t.BurstsPerDay < 0 || t.BurstFactor < 1 || t.BurstMinutes < 0 {
		v.add(p+".bursts_per_day", "use bursts_per_day >= 0, burst_factor >= 1 and burst_minutes >= 0", "burst settings out of range")
	}
}
