package fleet

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestEndpointAccountDefaultsToTheFleets(t *testing.T) {
	f, err := Parse("fleet.yaml", []byte(strings.Replace(validBase, "endpoints:\n", `endpoints:
  - name: other
    account: "210987654321"
    model: m
    engine: djl
    instances: [{type: ml.g5.2xlarge, az: us-east-1b, count: 1, gpus: 1, gpu_memory_mib: 23028}]
    traffic: {base_rps: 1}
`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.AccountOf(&f.Endpoints[0]); got != "210987654321" {
		t.Errorf("own account: got %q", got)
	}
	if got := f.AccountOf(&f.Endpoints[1]); got != "123456789012" {
		t.Errorf("inherited account: got %q", got)
	}
	if got := f.Accounts(); !slices.Equal(got, []string{"123456789012", "210987654321"}) {
		t.Errorf("Accounts() = %q", got)
	}
}

func TestInRegionMovesZonesAndNamesWithoutTouchingTheOriginal(t *testing.T) {
	orig := Default()
	moved := orig.InRegion("eu-west-1", "eu")
	if err := moved.Validate(); err != nil {
		t.Fatalf("moved fleet is invalid: %v", err)
	}
	if moved.Region != "eu-west-1" || !slices.Equal(moved.AZs(), []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}) {
		t.Errorf("moved: region %s, zones %v", moved.Region, moved.AZs())
	}
	for i, e := range moved.Endpoints {
		if e.Name != orig.Endpoints[i].Name+"-eu" {
			t.Errorf("endpoint %d: %q, want %q", i, e.Name, orig.Endpoints[i].Name+"-eu")
		}
		for j, ic := range e.InferenceComponents {
			if ic.Name != orig.Endpoints[i].InferenceComponents[j].Name+"-eu" {
				t.Errorf("IC %q not renamed", ic.Name)
			}
		}
	}
	if fresh := Default(); !slices.Equal(orig.AZs(), fresh.AZs()) || orig.Endpoints[0].Name != fresh.Endpoints[0].Name ||
		orig.Endpoints[0].InferenceComponents[0].Name != fresh.Endpoints[0].InferenceComponents[0].Name {
		t.Errorf("InRegion changed the original fleet")
	}
	if same := orig.InRegion("us-west-2", ""); same.Endpoints[0].Name != orig.Endpoints[0].Name {
		t.Errorf("an empty suffix renamed %q", same.Endpoints[0].Name)
	}
}

// Every region holds both accounts and every account both regions, with distinct names.
func TestTwoRegionsCrossAccountsAndRegions(t *testing.T) {
	fs := TwoRegions()
	if len(fs) != 2 || fs[0].Region != "us-east-1" || fs[1].Region != "us-west-2" {
		t.Fatalf("regions: %v", fs)
	}
	names := map[string]string{}
	byAccount := map[string][]string{}
	for _, f := range fs {
		if err := f.Validate(); err != nil {
			t.Fatalf("%s: %v", f.Region, err)
		}
		if got := f.Accounts(); !slices.Equal(got, []string{MonitoringAccount, SourceAccount}) {
			t.Errorf("%s holds accounts %v, want both", f.Region, got)
		}
		for i := range f.Endpoints {
			e := &f.Endpoints[i]
			if r, dup := names[e.Name]; dup {
				t.Errorf("endpoint %s is in %s and %s", e.Name, r, f.Region)
			}
			names[e.Name] = f.Region
			a := f.AccountOf(e)
			if !slices.Contains(byAccount[a], f.Region) {
				byAccount[a] = append(byAccount[a], f.Region)
			}
		}
	}
	for _, a := range []string{MonitoringAccount, SourceAccount} {
		if len(byAccount[a]) != 2 {
			t.Errorf("account %s is in %v, want both regions", a, byAccount[a])
		}
	}
}

func TestValidateReportsWithoutLines(t *testing.T) {
	f := Default()
	f.Endpoints[1].Account = "12345"
	err := f.Validate()
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || es[0].Path != "endpoints[1].account" || es[0].File != "" || es[0].Line != 0 {
		t.Fatalf("got %#v, want an endpoints[1].account error without file or line", err)
	}
}
