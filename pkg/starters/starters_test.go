package starters

import (
	"strings"
	"testing"

	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
)

// TestFrontendStartersFresh: the query editor reads src/starters.json; it must be what List
// writes today.
func TestFrontendStartersFresh(t *testing.T) {
	goldentest.CheckGenerated(t, "src/starters.json", JSON, "go generate ./pkg/starters")
}

// Each starter is offered with a title and a one-line reason, once.
func TestStartersComplete(t *testing.T) {
	qs := List()
	if len(qs) < 10 {
		t.Fatalf("%d starters, want at least ten", len(qs))
	}
	seen := map[string]bool{}
	for _, s := range qs {
		if s.Title == "" || s.Expr == "" || s.Note == "" || strings.Contains(s.Note, "\n") {
			t.Errorf("starter %+v: want a title, an expression and a one-line note", s)
		}
		if seen[s.Expr] || seen[s.Title] {
			t.Errorf("starter %q listed twice", s.Title)
		}
		seen[s.Expr], seen[s.Title] = true, true
	}
}
