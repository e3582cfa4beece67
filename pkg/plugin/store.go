package plugin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// sharedStore is a data source instance's handle on the shared store (jsonData.sharedStore):
// the results cache's peer, the account's budget and what the user is told about the store.
// Nil on a Datasource without a store, which then behaves as it always has.
type sharedStore struct {
	st   *sharedstore.Store
	peer rcache.Peer // st under this data source's namespace; nil while broken
	// broken is why the configured store cannot be used at all (no org id, a uid the
	// namespace refuses): every response says so and the plugin runs as without a store.
	broken error
	outage outage

	id       sharedstore.Identity // the settings' credential identity, without account and region
	share    float64              // of the account's limits, for this data source's replicas together
	fallback sharedstore.Fallback // one replica's limits while the store is unavailable
	account  account
}

// openStore opens the instance's store: its namespace is the key prefix, the Grafana org
// (uids are unique per org only), the uid and the hash of the credential identity. It makes
// no call: the first operation connects.
func openStore(ctx context.Context, uid string, s *models.Settings) *sharedStore {
	h := &sharedStore{}
	st, err := sharedstore.Open(s.SharedStore)
	if err != nil {
		h.broken = err
		return h
	}
	h.st = st
	org := backend.PluginConfigFromContext(ctx).OrgID
	if org == 0 {
		// Two orgs' data sources may share a uid: without the org, their keys would meet.
		h.broken = errors.New("Grafana did not send the data source's org id, which keys its entries: the store is not used")
		return h
	}
	h.id = identity(s.Auth)
	ns, err := sharedstore.NewNamespace(s.SharedStore.KeyPrefix, org, uid, h.id)
	if err != nil {
		h.broken = err
		return h
	}
	h.peer = trackedPeer{sharedstore.NewPeer(st, ns)}
	var fallbackShare float64
	h.share, fallbackShare = s.SharedStore.Shares()
	h.fallback = sharedstore.FallbackOf(sharedstore.AccountLimits{}, h.share, fallbackShare)
	h.account.fallback = awsapi.AccountOf(s.Auth.AssumeRoleARN)
	return h
}

// identity is who the settings make the data source to AWS, read without a call: the auth
// type and what selects the caller (profile, access key id), the role, the external id and
// the endpoints. The account STS would report is left out, as it would cost a call before
// the first key; the region is in every entry's name already. Only its hash is stored.
func identity(a awsauth.Settings) sharedstore.Identity {
	endpoints := []string{a.Endpoint, a.DatasourceURL}
	for _, r := range slices.Sorted(maps.Keys(a.RegionEndpoints)) {
		endpoints = append(endpoints, r+"="+a.RegionEndpoints[r])
	}
	return sharedstore.Identity{
		// The access key id identifies the IAM user; it is hashed, never stored.
		Principal:  strings.Join([]string{a.AuthType, a.Profile, a.AccessKey.Reveal()}, "\x00"),
		RoleARN:    a.AssumeRoleARN,
		ExternalID: a.ExternalID,
		Endpoint:   strings.Join(endpoints, "\x00"),
	}
}

// cachePeer is the results cache's peer: nil without a usable store.
func (h *sharedStore) cachePeer() rcache.Peer {
	if h == nil {
		return nil
	}
	return h.peer
}

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
	return release, wait, storeUseOf(ctx).fault(err)
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

// close ends the store's connections.
func (h *sharedStore) close() {
	if h != nil && h.st != nil {
		_ = h.st.Close()
	}
}

// unavailable is why the store is not in use now, nil when it is: broken, backing off
// after a failure, or the failure this query met (a full store fails writes without
// backing off).
func (h *sharedStore) unavailable(use *storeUse) error {
	if h.broken != nil {
		return h.broken
	}
	if err := h.st.Unavailable(); err != nil {
		return err
	}
	return use.failed()
}

// outage picks the response that carries the store's notice: the first after the store
// started failing, not every panel's, and again only after it recovered and failed anew.
type outage struct {
	mu sync.Mutex
	on bool
}

// report records whether the store is failing and says whether this response starts an
// outage or ends one.
func (o *outage) report(failing bool) (started, ended bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	started, ended = failing && !o.on, !failing && o.on
	o.on = failing
	return started, ended
}

// storeUse is what one query's calls to the store found, for its stats.
type storeUse struct {
	mu           sync.Mutex
	hits, misses int
	failures     int
	err          error // the last failure
}

type storeUseKey struct{}

// withStoreUse gives the query a record of its calls to the store.
func withStoreUse(ctx context.Context) (context.Context, *storeUse) {
	u := &storeUse{}
	return context.WithValue(ctx, storeUseKey{}, u), u
}

// storeUseOf is the query's record, nil outside a query (resource calls).
func storeUseOf(ctx context.Context) *storeUse {
	u, _ := ctx.Value(storeUseKey{}).(*storeUse)
	return u
}

// found records a read: served from the store or not.
func (u *storeUse) found(hit bool) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if hit {
		u.hits++
	} else {
		u.misses++
	}
}

// fault records err when it is the store's failure (not the caller's cancellation, nor a
// value the codec refused) and returns it unchanged.
func (u *storeUse) fault(err error) error {
	if u == nil || !sharedstore.IsUnavailable(err) {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.failures++
	u.err = err
	return err
}

func (u *storeUse) failed() error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// Stat names in the query inspector.
const (
	storeStatPrefix   = "Shared store: "
	storeNoticePrefix = "shared cache unavailable: "
)

// annotate adds the store's state to the response's first frame: hits and misses, or why
// it is unavailable; and, on the first response of an outage, the notice.
func (h *sharedStore) annotate(resp *backend.DataResponse, use *storeUse) {
	if len(resp.Frames) == 0 {
		return // nowhere to say it; the next response with frames will
	}
	f := resp.Frames[0]
	if f.Meta == nil {
		f.Meta = &data.FrameMeta{}
	}
	err := h.unavailable(use)
	if err == nil {
		if _, ended := h.outage.report(false); ended {
			logInfo("shared store available again")
		}
		use.mu.Lock()
		hits, misses := use.hits, use.misses
		use.mu.Unlock()
		f.Meta.Stats = append(f.Meta.Stats,
			data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "hit"}, Value: float64(hits)},
			data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "miss"}, Value: float64(misses)})
		return
	}
	why := strings.TrimPrefix(err.Error(), storeNoticePrefix)
	use.mu.Lock()
	failures := use.failures
	use.mu.Unlock()
	f.Meta.Stats = append(f.Meta.Stats, data.QueryStat{FieldConfig: data.FieldConfig{DisplayName: storeStatPrefix + "unavailable: " + why}, Value: float64(failures)})
	if started, _ := h.outage.report(true); started {
		f.Meta.Notices = append(f.Meta.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: storeNoticePrefix + why})
		logWarn("shared store unavailable: panels are served from the local cache and limiter", "reason", why)
	}
}

// health is Save & test's report of the store: reachable (version, round trip) or the
// exact error and its fix, always a warning: the plugin works without the store.
func (h *sharedStore) health(ctx context.Context) string {
	if h.broken != nil {
		return "Warning: " + storeNoticePrefix + strings.TrimPrefix(h.broken.Error(), storeNoticePrefix) + "; panels work without it."
	}
	hl, err := h.st.Health(ctx)
	if err != nil {
		return "Warning: " + err.Error() + "; panels work without it, each replica on its own cache and a share of the account's limits."
	}
	msg := hl.String() + "."
	if hl.Slow != nil {
		msg += " Warning: " + hl.Slow.Error() + "."
	}
	return msg + " " + h.account.describe(ctx)
}

// trackedPeer records each call's outcome in the query's storeUse.
type trackedPeer struct{ p rcache.Peer }

func (t trackedPeer) GetExtent(ctx context.Context, name string) (entry.Extent, bool, error) {
	e, ok, err := t.p.GetExtent(ctx, name)
	if u := storeUseOf(ctx); err != nil {
		u.fault(err)
	} else {
		u.found(ok)
	}
	return e, ok, err
}

func (t trackedPeer) Claim(ctx context.Context, name string, lease time.Duration) (rcache.Claim, error) {
	c, err := t.p.Claim(ctx, name, lease)
	if c != nil {
		c = trackedClaim{c, storeUseOf(ctx)}
	}
	return c, storeUseOf(ctx).fault(err)
}

func (t trackedPeer) AwaitClaim(ctx context.Context, name string, maxWait time.Duration) error {
	return storeUseOf(ctx).fault(t.p.AwaitClaim(ctx, name, maxWait))
}

func (t trackedPeer) Once(ctx context.Context, name string, ttl time.Duration, fetch func(context.Context) ([]byte, error)) ([]byte, bool, error, error) {
	val, shared, storeErr, err := t.p.Once(ctx, name, ttl, fetch)
	if u := storeUseOf(ctx); storeErr != nil {
		u.fault(storeErr)
	} else {
		u.found(shared)
	}
	return val, shared, storeErr, err
}

func (t trackedPeer) Unavailable() error { return t.p.Unavailable() }

// trackedClaim records the failures of publishing or releasing a claim.
type trackedClaim struct {
	c   rcache.Claim
	use *storeUse
}

func (c trackedClaim) Publish(ctx context.Context, e entry.Extent, ttl time.Duration) error {
	return c.use.fault(c.c.Publish(ctx, e, ttl))
}

func (c trackedClaim) Release(ctx context.Context) error { return c.use.fault(c.c.Release(ctx)) }
