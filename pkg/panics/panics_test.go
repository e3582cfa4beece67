package panics

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestRecoverInAGoroutine(t *testing.T) {
	boom := errors.New("boom")
	isRuntime := func(v any) bool { _, ok := v.(runtime.Error); return ok }
	cases := []struct {
		name  string
		fn    func()
		value func(any) bool // nil = no panic expected
	}{
		{"nil map write", func() { var m map[string]int; m["x"] = 1 }, isRuntime},
		{"slice bounds", func() { s := []int{1}; i := -1; _ = s[i:] }, isRuntime},
		{"error value", func() { panic(boom) }, func(v any) bool { return v == boom }},
		{"no panic", func() {}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got *Error
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer Recover(func(e *Error) { got = e })
				c.fn()
			}()
			wg.Wait()
			if c.value == nil {
				if got != nil {
					t.Fatalf("recovered %v without a panic", got)
				}
				return
			}
			if got == nil || !c.value(got.Value) {
				t.Fatalf("got %#v, want the panic's value", got)
			}
			if !strings.Contains(string(got.Stack), "panics_test.go") {
				t.Fatalf("stack does not show where it panicked:\n%s", got.Stack)
			}
		})
	}
}

// TestErrorSaysInternal: the message a user sees calls it an internal error and keeps the value.
func TestErrorSaysInternal(t *testing.T) {
	if got := (&Error{Value: "boom"}).Error(); got != "internal error (panic: boom)" {
		t.Errorf("got %q", got)
	}
}
