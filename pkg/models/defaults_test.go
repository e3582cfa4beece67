package models

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestFrontendDefaultsFresh: the config editor reads src/defaults.json; it must be what
// DefaultsJSON writes today.
func TestFrontendDefaultsFresh(t *testing.T) {
	want, err := DefaultsJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "src", "defaults.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("src/defaults.json is stale: run go generate ./pkg/models")
	}
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
