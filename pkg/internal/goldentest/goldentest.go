// Package goldentest compares backend.DataResponse values with golden files, for the
// tests of the packages that build responses (converter, plugin), and generated files with
// their generator.
package goldentest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/experimental"
	"github.com/stretchr/testify/assert"
)

// errorHeader starts every golden file of a response with an error.
const errorHeader = "// Golden error response: the JSON of backend.DataResponse. Regenerate with -update.\n"

// CheckDataResponse compares dr with <dir>/<name>.jsonc, rewriting the file first when
// update is set. Responses without an error go through the SDK's
// CheckGoldenJSONResponse. That checker cannot read back a file it wrote for a response
// with an error (the header then lacks the marker it splits on), so those files hold the
// plain JSON of the DataResponse after errorHeader, compared the same way (JSON equality).
func CheckDataResponse(t *testing.T, dir, name string, dr *backend.DataResponse, update bool) {
	t.Helper()
	if dr.Error == nil {
		experimental.CheckGoldenJSONResponse(t, dir, name, dr, update)
		return
	}
	checkError(t, dir, name, dr, update)
}

func checkError(t testing.TB, dir, name string, dr *backend.DataResponse, update bool) {
	t.Helper()
	path := filepath.Join(dir, name+".jsonc")
	got, err := json.MarshalIndent(dr, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if update {
		if err := os.WriteFile(path, append([]byte(errorHeader), got...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", path, err)
	}
	want, ok := strings.CutPrefix(string(raw), errorHeader)
	if !ok {
		t.Fatalf("%s does not start with the golden header %q", path, errorHeader)
	}
	assert.JSONEq(t, want, string(got), "%s differs", path)
}

// CheckGenerated fails when the repository's file at path (from the module root; the test
// runs in a package two levels below it, pkg/<name>) differs from what gen writes; the
// failure names regen, the command that rewrites the file.
func CheckGenerated(t *testing.T, path string, gen func() ([]byte, error), regen string) {
	t.Helper()
	want, err := gen()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run %s", path, regen)
	}
}
