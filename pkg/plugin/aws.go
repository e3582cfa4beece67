package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// awsErr marks a failure of an AWS call as the user's side (AWS, the network, the IAM
// policy), keeping its type for fault.Explain; a recovered panic stays the plugin's.
func awsErr(err error) error {
	var p *panics.Error
	if err == nil || errors.As(err, &p) {
		return err
	}
	return backend.DownstreamError(err)
}

// parallel runs the calls at once and returns their errors, in order. A panic in one becomes
// its error (and a log line) instead of ending the process.
func parallel(what string, calls ...func() error) []error {
	return parallelN(what, len(calls), calls...)
}

// parallelN is parallel with at most n calls running at a time.
func parallelN(what string, n int, calls ...func() error) []error {
	errs := fanout.Each(context.Background(), n, calls, func(_ context.Context, _ int, call func() error) error { return call() })
	for _, err := range errs {
		if p, ok := err.(*panics.Error); ok {
			logError(what+" panicked", "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
		}
	}
	return errs
}
