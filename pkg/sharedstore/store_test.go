package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry/entrytest"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

// healthyTimeout is the deadline of tests that expect the store to answer: generous, as
// the machine's cores are shared; the fault tests use DefaultTimeout.
const healthyTimeout = 2 * time.Second

func openStore(t *testing.T, addr string, mods ...func(*Settings)) *Store {
	t.Helper()
	s := Settings{Addresses: []string{addr}, KeyPrefix: "test:", Timeout: healthyTimeout}
	for _, m := range mods {
		m(&s)
	}
	st, err := Open(s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// rawClient talks to the server around the store (CONFIG SET, KEYS).
func rawClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fakeClock drives a store's backoff, so the fault tests step through it without sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func withClock(st *Store) *fakeClock {
	c := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	st.gate.mu.Lock()
	st.gate.now = c.Now
	st.gate.mu.Unlock()
	return c
}

func storeError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	return e
}

func TestHealthReportsServerAndVersion(t *testing.T) {
	srv := storetest.Start(t)
	out, err := exec.Command(storetest.Binary(), "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`v=(\S+)`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "redis-server --version: %s", out)

	h, err := openStore(t, srv.Addr).Health(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "Redis", h.Server)
	assert.Equal(t, m[1], h.Version)
	assert.Equal(t, "standalone", h.Mode)
	assert.Positive(t, h.RoundTrip)
	assert.NoError(t, h.Slow)
	assert.Contains(t, h.String(), "Redis "+m[1]+" (standalone), round trip")
}

func TestParseInfo(t *testing.T) {
	tests := []struct {
		name, info string
		want       Health
	}{
		{name: "Valkey 8 keeps redis_version for old clients", info: "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.2\r\nredis_mode:cluster\r\n",
			want: Health{Server: "Valkey", Version: "8.0.2", Mode: "cluster"}},
		{name: "Redis 7", info: "# Server\r\nredis_version:7.2.5\r\nredis_mode:standalone\r\n", want: Health{Server: "Redis", Version: "7.2.5", Mode: "standalone"}},
		{name: "a managed server that hides fields", info: "# Server\r\n", want: Health{Server: "Redis", Version: "(version not reported)", Mode: "standalone"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, parseInfo(tc.info)) })
	}
}

// TestNamespacesIsolate writes the same entry name from data sources that differ in one
// thing each (org, uid, or one field of the credential identity) and reads every one
// back: each must see only its own. If the namespace dropped the credential hash, the
// data sources differing only in credentials would share a key and read each other's.
func TestNamespacesIsolate(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr)
	ctx := context.Background()
	base := Identity{Account: "123456789012", Principal: "arn:aws:iam::123456789012:role/team-a", RoleARN: "arn:aws:iam::123456789012:role/team-a",
		ExternalID: "ext-7f3a", Endpoint: "", Region: "us-east-1"}
	vary := map[string]func(*Identity){
		"account":     func(i *Identity) { i.Account = "210987654321" },
		"principal":   func(i *Identity) { i.Principal = "arn:aws:iam::123456789012:user/bob" },
		"role":        func(i *Identity) { i.RoleARN = "arn:aws:iam::123456789012:role/team-b" },
		"external id": func(i *Identity) { i.ExternalID = "ext-0000" },
		"endpoint":    func(i *Identity) { i.Endpoint = "http://127.0.0.1:9000" },
		"region":      func(i *Identity) { i.Region = "eu-west-1" },
	}
	type ds struct {
		name string
		org  int64
		uid  string
		id   Identity
	}
	all := []ds{{"base", 1, "sagemaker", base}, {"other org", 2, "sagemaker", base}, {"other uid", 1, "sagemaker-b", base}}
	for name, f := range vary {
		id := base
		f(&id)
		all = append(all, ds{name, 1, "sagemaker", id})
	}
	const entry = `sum by (instance_id) (rate(gpu_utilization[5m]))|60s`
	keys := map[string]string{}
	for _, d := range all {
		ns, err := NewNamespace("test:", d.org, d.uid, d.id)
		require.NoError(t, err)
		keys[d.name] = ns.Key("extent", entry)
		require.NoError(t, st.Set(ctx, keys[d.name], []byte(d.name), time.Minute))
	}
	for _, d := range all {
		v, ok, err := st.Get(ctx, keys[d.name])
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, d.name, string(v), "data source %q read another's entry", d.name)
	}
	stored, err := rawClient(t, srv.Addr).Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.Len(t, stored, len(all))
	for _, k := range stored {
		for _, plain := range []string{base.ExternalID, base.RoleARN, base.Account, "team-a"} {
			assert.NotContains(t, k, plain, "keys carry the identity's hash, never its fields")
		}
	}
}

func TestGetExtentRejectsAndCounts(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr)
	ctx := context.Background()
	e := entrytest.Extent(3, 8, 120)
	good, err := entry.Encode(e)
	require.NoError(t, err)
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x10
	future := append([]byte(nil), good...)
	future[2] = entry.Version + 1
	entries := map[string][]byte{"good": good, "flipped": flipped, "future": future, "garbage": []byte("{\"json\":true}")}
	for k, b := range entries {
		require.NoError(t, st.Set(ctx, "test:"+k, b, time.Minute))
	}
	got, ok, err := st.GetExtent(ctx, "test:good")
	require.NoError(t, err)
	require.True(t, ok)
	entrytest.Same(t, e, got)
	for _, k := range []string{"flipped", "future", "garbage"} {
		_, ok, err := st.GetExtent(ctx, "test:"+k)
		assert.NoError(t, err, k)
		assert.False(t, ok, "%s must be served as a miss", k)
	}
	assert.Equal(t, map[string]int64{entry.BadChecksum: 1, entry.UnknownVersion: 1, entry.Malformed: 1, MissingChunk: 0}, st.Stats().Rejected)
}

func TestOpenRefusesBadSettings(t *testing.T) {
	_, err := Open(Settings{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), SetAddresses)
	_, err = Open(Settings{Addresses: []string{"r:1"}, KeyPrefix: "p:", Timeout: time.Hour})
	require.Error(t, err)
	assert.Contains(t, err.Error(), SetTimeout)
}

func TestErrorText(t *testing.T) {
	s := Settings{Addresses: []string{"r:6379"}, Timeout: DefaultTimeout}
	e := s.classify("GET", "r:6379", fmt.Errorf("dial: %w", context.DeadlineExceeded))
	assert.Equal(t, Timeout, e.Kind)
	assert.True(t, strings.HasPrefix(e.Error(), "shared cache unavailable: GET at r:6379: timeout"), e.Error())
	assert.True(t, IsUnavailable(fmt.Errorf("wrapped: %w", e)))
	assert.False(t, IsUnavailable(errors.New("upstream 500")))
}

// TestClosedIsNotAnOutage: an operation after Close (a replaced instance's request still
// running) is our own doing: ErrClosed, no failure of the store, no backoff to report.
func TestClosedIsNotAnOutage(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr)
	require.NoError(t, st.Close())
	_, _, err := st.Get(context.Background(), "test:{closed}")
	assert.ErrorIs(t, err, ErrClosed)
	assert.False(t, IsUnavailable(err), "%v", err)
	assert.NoError(t, st.Unavailable())
	assert.Zero(t, st.Stats().Failures)
}
