// Package panics turns a panic in a goroutine the plugin starts into an error for the one
// query, rule or request that goroutine served. An unrecovered panic in any goroutine ends
// the plugin process, and with it every panel of every dashboard on that Grafana.
package panics

import (
	"fmt"
	"runtime/debug"
)

// Error is a recovered panic; Stack is for the log, not for the user.
type Error struct {
	Value any
	Stack []byte
}

func (e *Error) Error() string { return fmt.Sprintf("internal error (panic: %v)", e.Value) }

// Recover must be deferred directly (`defer panics.Recover(handle)`): when the goroutine
// panics, handle gets the panic as an *Error and the goroutine ends normally.
func Recover(handle func(*Error)) {
	if r := recover(); r != nil {
		handle(&Error{Value: r, Stack: debug.Stack()})
	}
}
