package plugin

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/pkg/fanout"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
)

// budget is the account's budget in region for the PromQL client's options, nil without a
// usable store.
func (h *sharedStore) budget(region string) promclient.AccountBudget {
	if h == nil || h.broken != nil || h.off != nil {
		return nil
	}
	return &accountBudget{h: h, region: region}
}

// accountBudget is the account's budget in one region (sharedstore.Budget), kept for the
// account once STS confirmed it and per credential identity until then.
type accountBudget struct {
	h      *sharedStore
	region string
	mu     sync.Mutex
	forAcc string // the account b was built for
	b      *sharedstore.Budget
}

// Take implements promclient.AccountBudget, recording the store's failures in the query's
// stats.
func (a *accountBudget) Take(ctx context.Context, c promclient.Class, cost int) (func(), time.Duration, error) {
	b, err := a.current()
	if err != nil {
		return nil, 0, err
	}
	release, wait, err := b.Take(ctx, c, cost)
	return release, wait, storeUseOf(ctx).record(err, true) // its scripts write
}

func (a *accountBudget) current() (*sharedstore.Budget, error) {
	acc := a.h.account.get()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.b == nil || a.forAcc != acc {
		// Until STS confirms the account, acc is "" and the budget is the credential
		// identity's (cred-<hash>): the same for replicas of the same settings, and no
		// data source can charge an account it merely names.
		id := a.h.id
		id.Account, id.Region = acc, a.region
		b, err := sharedstore.NewBudget(a.h.st, id, sharedstore.AccountLimits{}, a.h.share)
		if err != nil {
			return nil, err
		}
		a.b, a.forAcc = b, acc
	}
	return a.b, nil
}

// account is the AWS account the budget is kept for once STS GetCallerIdentity, asked at
// AWS's own endpoint, confirmed it. It is asked in the background on first use and again
// after a failure (at most once per accountRetry); no request waits for it.
type account struct {
	lookup func(context.Context) (string, error) // nil: never asked (no STS, or a custom endpoint's)
	mu     sync.Mutex
	id     string
	err    error // the last lookup's failure
	next   time.Time
	asking bool
	// asked is called after each lookup ends; tests wait on it.
	asked func()
}

const (
	accountLookupTimeout = 5 * time.Second
	accountRetry         = time.Minute
)

// get is the account STS confirmed, "" until then. A lookup that is due starts in the
// background, one at a time: the budget uses the credential scope meanwhile.
func (a *account) get() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.id == "" && a.lookup != nil && !a.asking && !time.Now().Before(a.next) {
		a.asking = true
		// AfterFunc runs ask on its own goroutine: no go statement outside pkg/fanout.
		time.AfterFunc(0, a.ask)
	}
	return a.id
}

// ask looks the account up, panic-safe through fanout, bounded by accountLookupTimeout.
func (a *account) ask() {
	ctx, cancel := context.WithTimeout(context.Background(), accountLookupTimeout)
	defer cancel()
	var id string
	err := fanout.Calls(ctx, 1, func(ctx context.Context) (err error) {
		id, err = a.lookup(ctx)
		return err
	})[0]
	if err == nil && !accountID.MatchString(id) {
		err = fmt.Errorf("STS answered %q, not a 12-digit account id", id)
	}
	a.mu.Lock()
	a.asking = false
	if err != nil {
		a.err, a.next = err, time.Now().Add(accountRetry)
	} else {
		a.id, a.err = id, nil
	}
	done := a.asked
	a.mu.Unlock()
	if done != nil {
		done()
	}
}

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// describe says, for Save & test, which account the budget is kept for, or why none yet;
// it starts a due lookup and never waits for it.
func (a *account) describe() string {
	a.get()
	a.mu.Lock()
	defer a.mu.Unlock()
	const perIdentity = "CloudWatch's limits are shared per credential: by the replicas and data sources with the same settings."
	switch {
	case a.id != "":
		return fmt.Sprintf("CloudWatch's limits are shared for account %s (confirmed by sts:GetCallerIdentity).", a.id)
	case a.lookup == nil:
		return "The account is not looked up at a custom endpoint, whose answer proves nothing: " + perIdentity
	case a.err != nil:
		return fmt.Sprintf("The account is unknown (sts:GetCallerIdentity failed: %v; asked again within %s): %s", a.err, accountRetry, perIdentity)
	}
	return "The account is pending (sts:GetCallerIdentity is asked in the background): until it answers, " + perIdentity
}

// askAccount makes the budget's account STS's answer for the data source's credentials,
// asked in its home region (the settings alone cannot tell it for keys or the default
// chain). Only AWS's own STS is trusted: a custom endpoint (an emulator, a proxy) could
// claim any account, so its data sources keep the credential scope, which includes it.
func (h *sharedStore) askAccount(sh Shared, home awsauth.Endpoint) error {
	if !awsauth.IsAWSEndpoint(home) {
		return nil
	}
	t, err := sh.transport()
	if err != nil {
		return err
	}
	h.stsTransport = t
	id := awsapi.NewIdentity(sh.Creds, home, sh.Seen, awsapi.WithTransport(t))
	h.account.lookup = func(ctx context.Context) (string, error) {
		acc, _, err := id.CallerIdentity(ctx)
		return acc, err
	}
	return nil
}

// lookupPacer is CloudTrail's LookupEvents pace of the account in region, shared by the
// account's replicas and data sources through the store; nil without a usable store (the
// client then paces itself at CloudTrail's whole rate).
func (h *sharedStore) lookupPacer(region string) awsapi.Pacer {
	if h == nil || h.broken != nil || h.off != nil {
		return nil
	}
	return &sharedPace{a: &accountBudget{h: h, region: region}, kind: sharedstore.KindLookupEvents, tps: awsapi.LookupEventsTPS,
		fallback: rate.NewLimiter(rate.Limit(h.alone*awsapi.LookupEventsTPS), 1)}
}

// sharedPace is one of the account's per-second limits without slots (sharedstore.Budget's
// Pace), as an awsapi.Pacer.
type sharedPace struct {
	a    *accountBudget
	kind string
	tps  float64
	// fallback paces the attempts the store cannot decide: this replica's part while it
	// fails (alone), so that the replicas together stay within the share.
	fallback *rate.Limiter
}

// Wait takes a call from the shared pace, waiting while it is spent; past the request's
// deadline it fails at once instead of waiting in vain.
func (p *sharedPace) Wait(ctx context.Context) error {
	for {
		wait, err := p.take(ctx)
		switch {
		case err != nil:
			return p.fallback.Wait(ctx)
		case wait == 0:
			return nil
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			r := sharedstore.ShareRate(p.a.h.share, p.tps)
			return fmt.Errorf("the account's %s pace, %g calls a second for this data source's replicas together, leaves no call before the request's deadline: raise %s, choose a shorter time range, or raise the query timeout",
				p.kind, r.PerSecond, sharedstore.SetAccountShare)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (p *sharedPace) take(ctx context.Context) (time.Duration, error) {
	b, err := p.a.current()
	if err != nil {
		return 0, err
	}
	wait, err := b.Pace(ctx, p.kind, p.tps)
	return wait, storeUseOf(ctx).record(err, true) // its script writes
}

// sweepPeer is the changes cache's peer: nil without a usable store.
func (h *sharedStore) sweepPeer() awsapi.SharedCache {
	if h == nil || h.peer == nil {
		return nil
	}
	return h.sweeps
}

// changesFill is the changes cache's lease and wait on the store: a sweep is one
// LookupEvents call per event name (more when an answer has pages) at the data source's
// share of CloudTrail's pace, 13 s at the default 80% (1 call a second). Twice that, as
// another range's sweep may share the pace, and never less than a lookup's lease: a
// waiter then waits for the holder's answer, not sweeping itself on the same pace. Its
// request's deadline still ends its wait.
func changesFill(share float64) (lease, wait time.Duration) {
	calls := 0
	for _, names := range changes.Events {
		calls += len(names)
	}
	r := sharedstore.ShareRate(share, awsapi.LookupEventsTPS)
	d := max(2*time.Duration(float64(calls)/r.PerSecond*float64(time.Second)), minChangesFill)
	return d, d
}

// minChangesFill is the lookups' lease (sharedstore's lookupLease).
const minChangesFill = 30 * time.Second
