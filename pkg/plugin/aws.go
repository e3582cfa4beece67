package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/panics"
)

// AWSFactory builds one region's CloudWatch alarms and SageMaker inventory client for
// validated settings, on the same shared credentials and endpoint rules as the PromQL
// client; sh.Seen learns the credentials it signs with, for redaction. Tests inject fakes
// of awsapi.API through it.
type AWSFactory func(ctx context.Context, s *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.API, error)

// Option changes how New builds a datasource.
type Option func(*options)

type options struct {
	aws    AWSFactory
	prices PricesFactory
}

// WithAWS builds the alarms and inventory client with f instead of NewAWSAPI.
func WithAWS(f AWSFactory) Option { return func(o *options) { o.aws = f } }

// awsCacheTTL is how long contributors and history are reused (alarms for their shortest
// evaluation period, 10–60 s; the inventory 4× as long, see awsapi.Cached): panels and
// viewers refreshing together share one AWS call.
const awsCacheTTL = 15 * time.Second

// NewAWSAPI is the production AWSFactory: pkg/awsapi's client on the data source's shared
// credentials and the region's endpoint, behind its brief per-region cache.
func NewAWSAPI(_ context.Context, _ *models.Settings, ep awsauth.Endpoint, sh Shared) (awsapi.API, error) {
	t, err := sh.transport()
	if err != nil {
		return nil, err
	}
	return awsapi.Cached(awsapi.NewWithCredentials(sh.Creds, ep, sh.Seen, awsapi.WithTransport(t)), awsCacheTTL, nil), nil
}

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
