package panics

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestRecoverInAGoroutine(t *testing.T) {
	cases := []struct {
		name string
		fn   func()
		want string // "" = no panic expected
	}{
		{"nil map write", func() { var m map[string]int; m["x"] = 1 }, "assignment to entry in nil map"},
		{"slice bounds", func() { s := []int{1}; i := -1; _ = s[i:] }, "slice bounds out of range"},
		{"error value", func() { panic(errors.New("boom")) }, "boom"},
		{"no panic", func() {}, ""},
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
			if c.want == "" {
				if got != nil {
					t.Fatalf("recovered %v without a panic", got)
				}
				return
			}
			if got == nil || !strings.Contains(got.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", got, c.want)
			}
			if !strings.Contains(string(got.Stack), "panics_test.go") {
				t.Fatalf("stack does not show where it panicked:\n%s", got.Stack)
			}
		})
	}
}
