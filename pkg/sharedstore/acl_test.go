package sharedstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// aclRules are the permissions docs/high-availability.md and the NOPERM fix ask for.
const aclRules = "+@read +@write +@scripting +ping +info +time"

// TestACLUser: an ACL user with exactly the documented permissions on the key prefix and
// the budgets' prefix can do everything the store does; one without scripting is told
// which permissions to grant.
func TestACLUser(t *testing.T) {
	srv := storetest.Start(t)
	ctx := context.Background()
	raw := rawClient(t, srv.Addr)
	for user, rules := range map[string]string{"grafana": aclRules, "noscripts": strings.ReplaceAll(aclRules, "+@scripting ", "")} {
		args := []any{"ACL", "SETUSER", user, "on", ">pw-" + user, "~test:*", "~" + budgetPrefix + "*", "resetchannels", "-@all"}
		for _, r := range strings.Fields(rules) {
			args = append(args, r)
		}
		require.NoError(t, raw.Do(ctx, args...).Err())
	}
	st := openStore(t, srv.Addr, func(s *Settings) { s.Username, s.Password = "grafana", "pw-grafana" })
	_, err := st.Health(ctx)
	require.NoError(t, err)
	r, err := st.Once(ctx, "test:{acl}", testFill, func(context.Context) ([]byte, error) { return []byte("v"), nil })
	require.NoError(t, err)
	require.NoError(t, r.StoreErr)
	for seed := range uint64(2) { // chunked, and replaced (its chunks retired)
		require.NoError(t, st.PutExtent(ctx, "test:{acl3}", noisyExtent(seed, 200, 360), time.Minute))
	}
	_, ok, err := st.GetExtent(ctx, "test:{acl3}")
	require.NoError(t, err)
	assert.True(t, ok)
	l, err := st.Acquire(ctx, "test:{acl2}", time.Minute)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	_, err = st.Allow(ctx, queryBudget, Rate{PerSecond: 10, Burst: 10}, 1)
	require.NoError(t, err)
	s, _, err := st.AcquireSlot(ctx, queryBudget, 3, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx))

	limited := openStore(t, srv.Addr, func(s *Settings) { s.Username, s.Password = "noscripts", "pw-noscripts" })
	_, err = limited.Allow(ctx, queryBudget, Rate{PerSecond: 10, Burst: 10}, 1)
	e := storeError(t, err)
	assert.Equal(t, Auth, e.Kind)
	assert.Contains(t, e.Error(), "NOPERM")
	assert.Contains(t, e.Error(), aclRules)
}
