package sharedstore

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// hashTag is the part of a key Redis Cluster hashes: the first {…} with something inside.
func hashTag(key string) string {
	if m := regexp.MustCompile(`\{([^}]+)\}`).FindStringSubmatch(key); m != nil {
		return m[1]
	}
	return key
}

func TestNamespaceKeys(t *testing.T) {
	id := Identity{Account: "123456789012", RoleARN: "arn:aws:iam::123456789012:role/r", Region: "us-east-1"}
	ns, err := NewNamespace("inferscope:", 3, "sagemaker-prod", id)
	require.NoError(t, err)
	a, b := ns.Key("extent", "up|60s"), ns.Key("extent", "up|120s")
	assert.True(t, strings.HasPrefix(a, "inferscope:o3:sagemaker-prod:"+id.hash()+":extent:{"), a)
	assert.Equal(t, hashTag(a), hashTag(LeaseKey(a)), "an entry and its lease share a cluster slot")
	assert.NotEqual(t, hashTag(a), hashTag(b), "entries spread over a cluster's slots")
	assert.NotEqual(t, a, ns.Key("labels", "up|60s"), "kinds are apart")
	assert.Len(t, a, len("inferscope:o3:sagemaker-prod:")+24+len(":extent:{")+32+1, "names are hashed: keys stay short")
}

func TestIdentityHashCoversEveryField(t *testing.T) {
	base := Identity{Account: "1", Principal: "2", RoleARN: "3", ExternalID: "4", Endpoint: "5", Region: "6"}
	seen := map[string]string{base.hash(): "base"}
	for name, id := range map[string]Identity{
		"account":   {Account: "x", Principal: "2", RoleARN: "3", ExternalID: "4", Endpoint: "5", Region: "6"},
		"principal": {Account: "1", Principal: "x", RoleARN: "3", ExternalID: "4", Endpoint: "5", Region: "6"},
		"role":      {Account: "1", Principal: "2", RoleARN: "x", ExternalID: "4", Endpoint: "5", Region: "6"},
		"external":  {Account: "1", Principal: "2", RoleARN: "3", ExternalID: "x", Endpoint: "5", Region: "6"},
		"endpoint":  {Account: "1", Principal: "2", RoleARN: "3", ExternalID: "4", Endpoint: "x", Region: "6"},
		"region":    {Account: "1", Principal: "2", RoleARN: "3", ExternalID: "4", Endpoint: "5", Region: "x"},
		// Fields are length-prefixed: moving a character from one to the next changes the hash.
		"shifted": {Account: "12", Principal: "", RoleARN: "3", ExternalID: "4", Endpoint: "5", Region: "6"},
	} {
		h := id.hash()
		_, dup := seen[h]
		assert.False(t, dup, "%s collides with %s", name, seen[h])
		seen[h] = name
	}
}

func TestNewNamespaceRefusesUID(t *testing.T) {
	for _, uid := range []string{"", "a{b}", "a:b", "with space", strings.Repeat("x", 41)} {
		_, err := NewNamespace("p:", 1, uid, Identity{})
		require.Error(t, err, "%q", uid)
		assert.Contains(t, err.Error(), "not a Grafana uid")
	}
}

func TestBudgetKey(t *testing.T) {
	k, err := BudgetKey{Account: "123456789012", Region: "us-east-1", Kind: "query"}.key("rate")
	require.NoError(t, err)
	assert.Equal(t, "inferscope:budget:{123456789012:us-east-1}:query:rate", k)
	for _, b := range []BudgetKey{{Account: "12345", Region: "us-east-1", Kind: "query"}, {Account: "123456789012", Region: "US East", Kind: "query"}, {Account: "123456789012", Region: "us-east-1", Kind: "q}{"}} {
		_, err := b.key("rate")
		assert.Error(t, err, "%+v", b)
	}
}

// TestBudgetIgnoresKeyPrefix: data sources of one account whose keyPrefix differs draw on
// one budget: a prefix of their own must not give each the account's whole share.
func TestBudgetIgnoresKeyPrefix(t *testing.T) {
	srv := storetest.Start(t)
	var budgets []*Budget
	for _, prefix := range []string{"team-a:", "team-b:"} {
		st := openStore(t, srv.Addr, func(s *Settings) { s.KeyPrefix = prefix })
		b, err := NewBudget(st, Identity{Account: "123456789012", Region: "us-east-1"}, AccountLimits{QueryConcurrency: 1}, 1)
		require.NoError(t, err)
		budgets = append(budgets, b)
	}
	ctx := context.Background()
	release, _, err := budgets[0].Take(ctx, promclient.ClassQuery, 1)
	require.NoError(t, err)
	require.NotNil(t, release, "the account's one slot")
	defer release()
	again, wait, err := budgets[1].Take(ctx, promclient.ClassQuery, 1)
	require.NoError(t, err)
	assert.Nil(t, again, "another prefix took a second slot of an account limited to one")
	assert.Positive(t, wait)
}
