package plugin

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
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
	// off is what is wrong with jsonData.sharedStore: the plugin runs without a store, each
	// response's stats and Save & test say why.
	off    error
	outage outage

	id       sharedstore.Identity // the settings' credential identity, without account and region
	timeout  time.Duration        // of one store operation (jsonData.sharedStore.timeout)
	share    float64              // of the account's limits, for this data source's replicas together
	fallback sharedstore.Fallback // one replica's limits while the store is unavailable
	alone    float64              // of the account's limits, one replica's while the store is unavailable
	// sweeps is the changes cache's peer: its waiters wait out a whole paced sweep.
	sweeps  awsapi.SharedCache
	account account
	// stsTransport carries the account's lookup; closed with the store.
	stsTransport *http.Transport

	// users counts the requests under way; close waits for them (closing), so that their
	// slots go back and they meet no closed client.
	usersMu   sync.Mutex
	users     int
	closing   bool
	closeOnce sync.Once
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
	h.st, h.timeout = st, s.SharedStore.Timeout
	org := backend.PluginConfigFromContext(ctx).OrgID
	if org == 0 {
		// Two orgs' data sources may share a uid: without the org, their keys would meet.
		h.broken = errors.New("Grafana did not send the data source's org id, which keys its entries: the store is not used")
		return h
	}
	h.id = identity(s.Auth, installation(ctx))
	ns, err := sharedstore.NewNamespace(s.SharedStore.KeyPrefix, org, uid, h.id)
	if err != nil {
		h.broken = err
		return h
	}
	var fallbackShare float64
	h.share, fallbackShare = s.SharedStore.Shares()
	h.alone = h.share * fallbackShare
	h.fallback = sharedstore.FallbackOf(sharedstore.AccountLimits{}, h.share, fallbackShare)
	peer := sharedstore.NewPeer(st, ns)
	h.peer = trackedPeer{peer}
	h.sweeps = trackedPeer{peer.WithFill(changesFill(h.share))}
	return h
}

// installation is Grafana's app URL (root_url): the same for the replicas behind one load
// balancer, different for two installations (dev and prod) sharing a store, whose default
// credential chains may be different accounts under identical settings. "" when Grafana
// does not send it.
func installation(ctx context.Context) string {
	u, _ := backend.GrafanaConfigFromContext(ctx).AppURL()
	return u
}

// identity is who the settings make the data source to AWS, read without a call: the
// Grafana installation, the auth type and what selects the caller (profile, access key
// id), the role, the external id and the endpoints. The account STS would report is left
// out, as it would cost a call before the first key; the region is in every entry's name
// already. Only its hash is stored.
func identity(a awsauth.Settings, installation string) sharedstore.Identity {
	endpoints := []string{a.Endpoint, a.DatasourceURL}
	for _, r := range slices.Sorted(maps.Keys(a.RegionEndpoints)) {
		endpoints = append(endpoints, r+"="+a.RegionEndpoints[r])
	}
	return sharedstore.Identity{
		// The access key id identifies the IAM user; it is hashed, never stored.
		Principal:  strings.Join([]string{installation, a.AuthType, a.Profile, a.AccessKey.Reveal()}, "\x00"),
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

// enter counts a request that may use the store until the returned func is called.
func (h *sharedStore) enter() (leave func()) {
	if h == nil {
		return func() {}
	}
	h.usersMu.Lock()
	h.users++
	h.usersMu.Unlock()
	return func() {
		h.usersMu.Lock()
		h.users--
		last := h.closing && h.users == 0
		h.usersMu.Unlock()
		if last {
			h.closeNow()
		}
	}
}

// close ends the store's connections and STS's idle ones once the requests under way
// ended: Grafana disposes a replaced instance while its requests may still run.
func (h *sharedStore) close() {
	if h == nil {
		return
	}
	h.usersMu.Lock()
	h.closing = true
	idle := h.users == 0
	h.usersMu.Unlock()
	if idle {
		h.closeNow()
	}
}

func (h *sharedStore) closeNow() {
	h.closeOnce.Do(func() {
		if h.st != nil {
			_ = h.st.Close()
		}
		if h.stsTransport != nil {
			h.stsTransport.CloseIdleConnections()
		}
	})
}

// healthTimeouts is how many of the store's operation deadlines Save & test's store check
// may take, but at least minHealthWait, so that a store slower than its deadline is still
// measured and named as slow.
const (
	healthTimeouts = 5
	minHealthWait  = time.Second
)

// health is Save & test's report of the store: reachable (version, round trip) or the
// exact error and its fix, always a warning: the plugin works without the store.
func (h *sharedStore) health(ctx context.Context) string {
	if h.off != nil {
		return "Error: the shared store is off: " + h.off.Error() + ". Until it is fixed, panels work without the store, each replica on its own cache and limits."
	}
	if h.broken != nil {
		return "Warning: " + storeNoticePrefix + strings.TrimPrefix(h.broken.Error(), storeNoticePrefix) + "; panels work without it."
	}
	// Its own deadline, not what the AWS checks left of Save & test's.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(healthTimeouts*h.timeout, minHealthWait))
	defer cancel()
	hl, err := h.st.Health(ctx)
	if err != nil {
		return "Warning: " + err.Error() + "; panels work without it, each replica on its own cache and a share of the account's limits."
	}
	msg := hl.String() + "."
	if hl.Slow != nil {
		msg += " Warning: " + hl.Slow.Error() + "."
	}
	return msg + " " + h.account.describe()
}
