package models

import (
	"reflect"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
)

// TestFrontendDefaultsFresh: the config editor reads src/defaults.json; it must be what
// DefaultsJSON writes today.
func TestFrontendDefaultsFresh(t *testing.T) {
	goldentest.CheckGenerated(t, "src/defaults.json", DefaultsJSON, "go generate ./pkg/models")
}

// TestDefaultsJSONIsWhatUnsetMeans: stored as jsonData, the defaults the editor shows load
// to the same settings as a jsonData that sets none of them.
func TestDefaultsJSONIsWhatUnsetMeans(t *testing.T) {
	b, err := DefaultsJSON()
	if err != nil {
		t.Fatal(err)
	}
	spelled, err := LoadSettings(instance(string(b), nil))
	if err != nil {
		t.Fatal(err)
	}
	unset, err := LoadSettings(instance(`{}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(spelled, unset) {
		t.Fatalf("defaults.json loads as %s, unset keys as %s", spelled, unset)
	}
}
