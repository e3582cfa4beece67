package promclient

import (
	"context"
	"errors"
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

// share waits for the account budget to grant one call of cl. While the budget's store
// fails, the fallback scheduler paces the call instead. A wait past
// ctx's deadline is refused at once with a *LimitError naming the shared budget.
func (c *Client) share(ctx context.Context, cl class, cost int) (func(), error) {
	arrived := time.Now()
	for {
		release, wait, err := c.budget.Take(ctx, cl.shared(), 1)
		if err != nil {
			if ctx.Err() != nil {
				return nil, c.budgetHeld(ctx.Err(), cl, arrived)
			}
			return c.fallback[cl].acquire(ctx, cost)
		}
		if release != nil {
			return release, nil
		}
		wait = max(wait, time.Millisecond) // never a busy loop on the store
		if deadline, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(deadline) {
			return nil, c.budgetHeld(context.DeadlineExceeded, cl, arrived)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, c.budgetHeld(err, cl, arrived)
		}
	}
}

// budgetHeld is the error of a request the account's budget held until ctx ended: a
// deadline is the budget's doing, a cancellation is not.
func (c *Client) budgetHeld(err error, cl class, arrived time.Time) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &LimitError{Shared: cl.shared(), Waited: time.Since(arrived)}
	}
	return err
}
