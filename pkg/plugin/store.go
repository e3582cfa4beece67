package plugin

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"

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
	outage outage

	id       sharedstore.Identity // the settings' credential identity, without account and region
	share    float64              // of the account's limits, for this data source's replicas together
	fallback sharedstore.Fallback // one replica's limits while the store is unavailable
	account  account
	// stsTransport carries the account's lookup; closed with the store.
	stsTransport *http.Transport
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

// close ends the store's connections and STS's idle ones.
func (h *sharedStore) close() {
	if h == nil {
		return
	}
	if h.st != nil {
		_ = h.st.Close()
	}
	if h.stsTransport != nil {
		h.stsTransport.CloseIdleConnections()
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
