package querymodel

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoAWSSDK holds why this package is apart from pkg/models: the PromQL client, the
// results cache, diagnosis and the dashboards generator link no AWS SDK package.
func TestNoAWSSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := []string{"./pkg/querymodel", "./pkg/promclient", "./pkg/rcache", "./pkg/diagnosis", "./dashboards/builder"}
	for _, p := range pkgs {
		cmd := exec.Command("go", "list", "-deps", p)
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		var aws []string
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/aws/") {
				aws = append(aws, dep)
			}
		}
		if len(aws) > 0 {
			t.Errorf("%s links %d AWS packages, e.g. %s: keep pkg/awsauth and pkg/models (settings) out of its imports", p, len(aws), aws[0])
		}
	}
}
