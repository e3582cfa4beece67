package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Prometheus errorType values (CloudWatch keeps Prometheus' envelope, notes §8.3) plus
// the one CloudWatch needs for concurrency throttling, which has no Prometheus twin [I].
const (
	errBadData     = "bad_data"
	errExecution   = "execution"
	errCanceled    = "canceled"
	errInternal    = "internal"
	errUnavailable = "unavailable"
	errNotFound    = "not_found"
	errMethod      = "method_not_allowed"
	errThrottled   = "too_many_requests"
)

// apiError is a failed request: HTTP status, Prometheus errorType and message.
type apiError struct {
	status int
	typ    string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func newAPIError(status int, typ, format string, args ...any) *apiError {
	return &apiError{status: status, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func badData(format string, args ...any) *apiError {
	return newAPIError(http.StatusBadRequest, errBadData, format, args...)
}

// result is what a route handler produces: data or an error, plus annotations.
type result struct {
	data     any
	warnings []string
	infos    []string
	err      *apiError
	// done, when set, runs after the body is written (the engine's result memory).
	done func()
}

// envelope is the Prometheus response body; empty warnings and infos are left out.
type envelope struct {
	Status    string   `json:"status"`
	Data      any      `json:"data,omitempty"`
	ErrorType string   `json:"errorType,omitempty"`
	Error     string   `json:"error,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Infos     []string `json:"infos,omitempty"`
}

// writeResult renders res in the Prometheus envelope, passing the body through the
// response faults.
func (s *Server) writeResult(w http.ResponseWriter, res result) {
	env := envelope{Status: "success", Data: res.data, Warnings: res.warnings, Infos: res.infos}
	status := http.StatusOK
	if res.err != nil {
		env = envelope{Status: "error", ErrorType: res.err.typ, Error: res.err.msg}
		status = res.err.status
	}
	body, err := json.Marshal(env)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(envelope{Status: "error", ErrorType: errInternal, Error: "encoding the response failed: " + err.Error()})
	}
	body, declared := s.faults.mangle(status, body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(declared))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
