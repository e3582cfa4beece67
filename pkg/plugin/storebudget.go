package plugin

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
)

// budget is the account's budget in region for the PromQL client's options, nil without a
// usable store.
func (h *sharedStore) budget(region string) promclient.AccountBudget {
	if h == nil || h.broken != nil {
		return nil
	}
	return &accountBudget{h: h, region: region}
}

// accountBudget is the account's budget in one region (sharedstore.Budget), kept for the
// account once it is known and per credential identity until then.
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
	b, err := a.current(ctx)
	if err != nil {
		return nil, 0, err
	}
	release, wait, err := b.Take(ctx, c, cost)
	return release, wait, storeUseOf(ctx).record(err, true) // its scripts write
}

func (a *accountBudget) current(ctx context.Context) (*sharedstore.Budget, error) {
	acc, _ := a.h.account.get(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.b == nil || a.forAcc != acc {
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

// account is the AWS account the budget is kept for: STS GetCallerIdentity's answer,
// asked on first use and again after a failure (at most once per accountRetry), the role
// ARN's account until then.
type account struct {
	lookup   func(context.Context) (string, error) // nil: the role ARN's account only
	fallback string                                // awsapi.AccountOf(the role ARN)
	mu       sync.Mutex
	id       string
	err      error // the last lookup's failure
	next     time.Time
}

const (
	accountLookupTimeout = 5 * time.Second
	accountRetry         = time.Minute
)

// get is the account and where it comes from ("" when unknown).
func (a *account) get(ctx context.Context) (id, source string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.id == "" && a.lookup != nil && !time.Now().Before(a.next) {
		// Not cut short by the one query that happens to ask first.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), accountLookupTimeout)
		id, err := a.lookup(lctx)
		cancel()
		if err == nil && !accountID.MatchString(id) {
			err = fmt.Errorf("STS answered %q, not a 12-digit account id", id)
		}
		if err != nil {
			a.err, a.next = err, time.Now().Add(accountRetry)
		} else {
			a.id, a.err = id, nil
		}
	}
	switch {
	case a.id != "":
		return a.id, "sts:GetCallerIdentity"
	case a.fallback != "":
		return a.fallback, "the role ARN"
	}
	return "", ""
}

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// describe says, for Save & test, which account the budget is kept for, or why none.
func (a *account) describe(ctx context.Context) string {
	id, source := a.get(ctx)
	a.mu.Lock()
	lookupErr := a.err
	a.mu.Unlock()
	var why string
	if lookupErr != nil {
		why = fmt.Sprintf(" (sts:GetCallerIdentity failed: %v; asked again within %s)", lookupErr, accountRetry)
	}
	if id == "" {
		return "The account is unknown" + why + ": CloudWatch's limits are shared per credential instead, by the replicas and data sources with the same credentials."
	}
	return fmt.Sprintf("CloudWatch's limits are shared for account %s (from %s)%s.", id, source, why)
}

// askAccount makes the budget's account STS's answer for the data source's credentials,
// asked in its home region on first use (the settings alone cannot tell it for keys or the
// default chain).
func (h *sharedStore) askAccount(sh Shared, home awsauth.Endpoint) error {
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
