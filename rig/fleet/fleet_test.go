package fleet

import (
	"errors"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const validBase = `account: "123456789012"
region: us-east-1
models:
  - name: m
    weights_mib: 10000
endpoints:
  - name: ep
    instances:
      - {type: ml.g5.12xlarge, az: us-east-1a, count: 2, gpus: 4, gpu_memory_mib: 23028}
    inference_components:
      - name: ic
        model: m
        engine: vllm
        copies: 2
        traffic: {base_rps: 1}
`

func TestParseErrorsNameLineProblemAndFix(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		line     int
		contains []string
	}{
		{"syntax", "account: \"1\nregion: [", 2, []string{"fix the YAML syntax"}},
		{"unknown field", strings.Replace(validBase, "    weights_mib: 10000", "    weights_mib: 10000\n    weigths: 3", 1), 6, []string{`unknown field "weigths"`, "check the spelling"}},
		{"wrong type", strings.Replace(validBase, "copies: 2", "copies: two", 1), 14, []string{"cannot unmarshal", "value type"}},
		{"bad account", strings.Replace(validBase, `"123456789012"`, `"12"`, 1), 1, []string{"account", "12 digits"}},
		{"unknown engine", strings.Replace(validBase, "engine: vllm", "engine: tgi", 1), 13, []string{`engine "tgi" is not supported`, "vllm, sglang, djl"}},
		{"unknown model", strings.Replace(validBase, "model: m", "model: nope", 1), 12, []string{`model "nope" is not defined`, "models:"}},
		{"az outside region", strings.Replace(validBase, "az: us-east-1a", "az: eu-west-1a", 1), 9, []string{"not in region us-east-1", "us-east-1a"}},
		{"too many copies", strings.Replace(validBase, "copies: 2", "copies: 9\n        max_copies: 9", 1), 14, []string{"9 copies x 1 GPUs need 9 GPUs", "has 8"}},
		{"copies above max", strings.Replace(validBase, "copies: 2", "copies: 3\n        max_copies: 2", 1), 14, []string{"outside min_copies", "min_copies <= copies <= max_copies"}},
		{"gpus per copy", strings.Replace(validBase, "copies: 2", "copies: 1\n        gpus_per_copy: 8", 1), 15, []string{"no instance has that many", "at most 4"}},
		{"weights do not fit", strings.Replace(validBase, "weights_mib: 10000", "weights_mib: 90000", 1), 12, []string{"needs 90000 MiB", "more GPUs per copy"}},
		{"missing traffic", strings.Replace(validBase, "        traffic: {base_rps: 1}\n", "", 1), 11, []string{"base_rps must be greater than zero"}},
		{"amplitude", strings.Replace(validBase, "base_rps: 1", "base_rps: 1, diurnal_amplitude: 1.5", 1), 15, []string{"diurnal_amplitude 1.5", "between 0 and 1"}},
		{"duplicate endpoint", validBase + `  - name: ep
    model: m
    engine: sglang
    instances: [{type: ml.g5.2xlarge, az: us-east-1b, count: 1, gpus: 1, gpu_memory_mib: 23028}]
    traffic: {base_rps: 1}
`, 16, []string{`endpoint "ep" is defined twice`}},
		{"sme without instances", strings.Replace(validBase, "endpoints:\n", "endpoints:\n  - name: lonely\n    model: m\n    engine: djl\n    traffic: {base_rps: 1}\n", 1), 7, []string{"has no instances", "add an instance group"}},
		{"empty", "", 1, []string{"empty"}},
		{"negative rebalance", strings.Replace(validBase, "region: us-east-1\n", "region: us-east-1\nrebalance_minutes: -5\n", 1), 3, []string{"rebalance_minutes -5 is negative", "use 0"}},
		{"reserved tag key", strings.Replace(validBase, "  - name: ep\n", "  - name: ep\n    tags: {\"aws:owner\": x}\n", 1), 8, []string{`endpoints[0].tags: tag key "aws:owner" starts with aws:`, "remove the aws: prefix"}},
		{"empty tag key", strings.Replace(validBase, "        copies: 2\n", "        copies: 2\n        tags: {\"\": x}\n", 1), 15, []string{`inference_components[0].tags: tag key "" has 0 characters`, "1 to 128"}},
		{"unknown tag family", strings.Replace(validBase, "region: us-east-1\n", "region: us-east-1\ntag_families: [vended, gpu]\n", 1), 3, []string{`tag_families[1]: unknown tag family "gpu"`, "vended, engine, dcgm, node"}},
		{"bad endpoint account", strings.Replace(validBase, "  - name: ep\n", "  - name: ep\n    account: \"4242\"\n", 1), 8, []string{`endpoints[0].account: account "4242" is not 12 digits`, "leave it out for the fleet's account"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("fleet.yaml", []byte(tt.yaml))
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("want Errors, got %v", err)
			}
			if es[0].Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", es[0].Line, tt.line, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "fleet.yaml:") {
				t.Errorf("error does not start with the file name: %q", msg)
			}
			for _, c := range tt.contains {
				if !strings.Contains(msg, c) {
					t.Errorf("error %q does not contain %q", msg, c)
				}
			}
		})
	}
}

func TestDefaultAndExampleAreValid(t *testing.T) {
	f := Default()
	if got := len(f.Endpoints); got < 3 || got > 4 {
		t.Errorf("default fleet has %d endpoints, want 3-4", got)
	}
	n, engines, ic, sme := 0, map[string]bool{}, 0, 0
	for _, e := range f.Endpoints {
		n += e.InstanceCount()
		if e.IsIC() {
			if len(e.InferenceComponents) >= 2 {
				ic++
			}
			for _, c := range e.InferenceComponents {
				engines[c.Engine] = true
			}
		} else {
			sme++
			engines[e.Engine] = true
		}
	}
	if n < 10 || n > 12 || len(f.AZs()) != 3 || len(engines) != 3 || ic == 0 || sme == 0 {
		t.Errorf("default fleet: %d instances, %d AZs, engines %v, %d multi-IC endpoints, %d single-model", n, len(f.AZs()), engines, ic, sme)
	}
	if _, err := Load("../../examples/fleet.yaml"); err != nil {
		t.Fatalf("examples/fleet.yaml: %v", err)
	}
}

func TestLargeFleetValidatesAndHasTheRequestedSize(t *testing.T) {
	f := Large(200, 8)
	data, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse("large.yaml", data)
	if err != nil {
		t.Fatalf("large fleet does not validate: %v", err)
	}
	inst, gpus := 0, 0
	for _, e := range g.Endpoints {
		inst += e.InstanceCount()
		gpus += e.GPUCount()
	}
	if inst != 200 || gpus != 1600 {
		t.Errorf("large fleet: %d instances, %d GPUs; want 200, 1600", inst, gpus)
	}
}

func TestPlaceSpreadsCopiesAndKeepsGPUsDisjoint(t *testing.T) {
	e := &Default().Endpoints[0]
	l, err := Place(e)
	if err != nil {
		t.Fatal(err)
	}
	used := map[[2]int]bool{}
	azOfFirstCopies := map[string]bool{}
	perIC := map[int]int{}
	for _, s := range l.Slots {
		perIC[s.IC]++
		for _, g := range s.GPUs {
			k := [2]int{s.Instance, g}
			if used[k] {
				t.Fatalf("GPU %v assigned twice", k)
			}
			used[k] = true
		}
		if s.IC == 0 && s.Copy < 3 {
			azOfFirstCopies[l.Instances[s.Instance].AZ] = true
		}
	}
	if len(azOfFirstCopies) != 3 {
		t.Errorf("first three copies of %s sit in %d AZs, want 3", e.InferenceComponents[0].Name, len(azOfFirstCopies))
	}
	for j, ic := range e.InferenceComponents {
		if perIC[j] < ic.Copies || perIC[j] > ic.MaxCopies {
			t.Errorf("%s has %d slots, want between %d and %d", ic.Name, perIC[j], ic.Copies, ic.MaxCopies)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want not-exist error, got %v", err)
	}
}
