package promclient

import (
	"context"
	"time"
)

// Class is a traffic class of CloudWatch's per-account limits.
type Class string

const (
	ClassQuery     Class = "query"     // query and query_range: 300 TPS, 30 concurrent per account
	ClassDiscovery Class = "discovery" // labels, label values, series: 10 TPS, 30 concurrent per account
)

// AccountBudget is the AWS account's limits shared with every replica and data source of
// the account (pkg/sharedstore keeps it in the shared store). The client's own scheduler
// always runs first; the budget is taken after it, just before a request is sent.
type AccountBudget interface {
	// Take spends cost calls of class from the account's rate and takes one of its
	// concurrent slots. Granted: release frees the slot. Denied: release is nil and wait
	// says when to ask again. An error is the store's failure: the request goes on under
	// the client's fallback share (Options.FallbackRPS, FallbackConcurrency).
	Take(ctx context.Context, class Class, cost int) (release func(), wait time.Duration, err error)
}
