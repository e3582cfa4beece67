package sharedstore

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/storetest"
)

func faultStore(t *testing.T, addr string, mods ...func(*Settings)) (*Store, *fakeClock) {
	t.Helper()
	st := openStore(t, addr, append([]func(*Settings){func(s *Settings) { s.Timeout = DefaultTimeout }}, mods...)...)
	return st, withClock(st)
}

// requireBackingOff checks that a store that just failed with kind does not try again at
// once: the next operation is skipped with the same cause and a retry time.
func requireBackingOff(t *testing.T, st *Store, kind Kind) {
	t.Helper()
	before := st.Stats()
	_, _, err := st.Get(context.Background(), "test:k")
	e := storeError(t, err)
	assert.Equal(t, kind, e.Kind)
	assert.False(t, e.RetryAt.IsZero(), "a skipped operation says when the store is tried again")
	assert.Contains(t, e.Error(), "not tried")
	after := st.Stats()
	assert.Equal(t, before.Skipped+1, after.Skipped)
	assert.Equal(t, before.Ops, after.Ops, "a skipped operation sends nothing")
	require.Error(t, st.Unavailable())
}

func TestRefusedIsTypedAndBacksOff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	st, clock := faultStore(t, addr)
	_, _, err = st.Get(context.Background(), "test:k")
	e := storeError(t, err)
	assert.Equal(t, Refused, e.Kind)
	assert.Contains(t, e.Error(), SetAddresses)
	requireBackingOff(t, st, Refused)

	// The backoff grows while the store stays down.
	clock.Add(maxBackoff)
	_, _, err = st.Get(context.Background(), "test:k")
	first := storeError(t, err)
	require.True(t, first.RetryAt.IsZero(), "after the backoff the store is tried again")
	_, _, err = st.Get(context.Background(), "test:k")
	assert.Greater(t, storeError(t, err).RetryAt.Sub(clock.Now()), minBackoff, "a second failure backs off longer")
}

// TestPausedServer: a hung server (SIGSTOP) fails the operation at the deadline as a
// timeout; the store then backs off, probes when the backoff ends, and is used again
// once the server answers.
func TestPausedServer(t *testing.T) {
	srv := storetest.Start(t)
	st, clock := faultStore(t, srv.Addr)
	ctx := context.Background()
	require.NoError(t, st.Set(ctx, "test:k", []byte("v"), time.Minute))

	srv.Pause()
	// One late answer is not an outage: the store stays in use until timeoutStrikes in a row.
	for i := range timeoutStrikes {
		_, _, err := st.Get(ctx, "test:k") // only the store's deadline ends it: the context has none
		e := storeError(t, err)
		assert.Equal(t, Timeout, e.Kind)
		assert.Contains(t, e.Error(), SetTimeout)
		if i < timeoutStrikes-1 {
			assert.NoError(t, st.Unavailable(), "paused after %d timeouts", i+1)
		}
	}
	requireBackingOff(t, st, Timeout)

	clock.Add(maxBackoff)
	_, _, err := st.Get(ctx, "test:k")
	assert.Equal(t, Timeout, storeError(t, err).Kind, "the probe, still paused")
	requireBackingOff(t, st, Timeout)

	srv.Resume()
	clock.Add(maxBackoff)
	v, ok, err := st.Get(ctx, "test:k")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "v", string(v))
	assert.NoError(t, st.Unavailable())
}

// TestRestartedServer: the store's connections die with the server; after the backoff a
// restarted (empty) server is used again.
func TestRestartedServer(t *testing.T) {
	srv := storetest.Start(t)
	st, clock := faultStore(t, srv.Addr)
	ctx := context.Background()
	require.NoError(t, st.Set(ctx, "test:k", []byte("v"), time.Minute))

	srv.Stop()
	_, _, err := st.Get(ctx, "test:k")
	e := storeError(t, err)
	assert.Contains(t, []Kind{Refused, Closed}, e.Kind, e.Error())
	requireBackingOff(t, st, e.Kind)

	srv.Restart()
	clock.Add(maxBackoff)
	_, ok, err := st.Get(ctx, "test:k")
	require.NoError(t, err)
	assert.False(t, ok, "the restarted server kept nothing (--save '')")
	require.NoError(t, st.Set(ctx, "test:k", []byte("w"), time.Minute))
}

func TestWrongPassword(t *testing.T) {
	const password = "correct-horse-battery"
	srv := storetest.Start(t, "--requirepass", password)
	tests := []struct {
		name, username, password string
		want                     string // the server's error, named in ours
	}{
		{name: "no password", want: "NOAUTH"},
		{name: "wrong password", password: "wrong-staple", want: "WRONGPASS"},
		{name: "unknown user", username: "nobody", password: password, want: "WRONGPASS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := faultStore(t, srv.Addr, func(s *Settings) { s.Username, s.Password = tc.username, awsauth.Secret(tc.password) })
			_, _, err := st.Get(context.Background(), "test:k")
			e := storeError(t, err)
			assert.Equal(t, Auth, e.Kind)
			assert.Contains(t, e.Error(), tc.want)
			assert.Contains(t, e.Error(), SetPassword)
			assert.NotContains(t, e.Error(), password)
			requireBackingOff(t, st, Auth)

			_, err = st.Health(context.Background())
			assert.Equal(t, Auth, storeError(t, err).Kind, "Save & test names it too")
		})
	}
	st, _ := faultStore(t, srv.Addr, func(s *Settings) { s.Password = password })
	require.NoError(t, st.Set(context.Background(), "test:k", []byte("v"), time.Minute))
}

// TestFullServer: under maxmemory with noeviction, writes fail as Full while reads go on;
// the server answered, so the store does not back off.
func TestFullServer(t *testing.T) {
	srv := storetest.Start(t)
	st, _ := faultStore(t, srv.Addr)
	ctx := context.Background()
	require.NoError(t, st.Set(ctx, "test:k", []byte("v"), time.Minute))
	raw := rawClient(t, srv.Addr)
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory", "1").Err())

	for range 2 { // the second write is tried too: no backoff
		e := storeError(t, st.Set(ctx, "test:other", []byte("w"), time.Minute))
		assert.Equal(t, Full, e.Kind)
		assert.Contains(t, e.Error(), "OOM")
		assert.Contains(t, e.Error(), "maxmemory-policy")
		assert.True(t, e.RetryAt.IsZero())
	}
	v, ok, err := st.Get(ctx, "test:k")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "v", string(v))
	assert.Zero(t, st.Stats().Skipped)
}

func TestTLSAgainstPlainServer(t *testing.T) {
	srv := storetest.Start(t)
	st, _ := faultStore(t, srv.Addr, func(s *Settings) { s.TLS = true })
	_, err := st.Health(context.Background())
	e := storeError(t, err)
	assert.Equal(t, TLS, e.Kind)
	assert.Contains(t, e.Error(), "does not speak TLS")
	assert.Contains(t, e.Error(), SetTLS)
}

func TestHealthNamesRefusedAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	st, _ := faultStore(t, "127.0.0.1:"+strconv.Itoa(port))
	_, err = st.Health(context.Background())
	e := storeError(t, err)
	assert.Equal(t, Refused, e.Kind)
	assert.Contains(t, e.Error(), "127.0.0.1:"+strconv.Itoa(port))
	assert.Contains(t, e.Error(), "check "+SetAddresses)
}

// delayProxy forwards TCP to addr and holds every chunk the server sends for delay: a
// store that answers, but slower than the deadline.
func delayProxy(t *testing.T, addr string, delay time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				_ = client.Close()
				continue
			}
			t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
			go func() { _, _ = io.Copy(server, client) }()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := server.Read(buf)
					if err != nil {
						_ = client.Close()
						return
					}
					time.Sleep(delay)
					if _, err := client.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestSlowStore: a store that answers after the deadline fails operations as a timeout;
// Save & test still reaches it and says its round trip is over the timeout.
func TestSlowStore(t *testing.T) {
	srv := storetest.Start(t)
	st, _ := faultStore(t, delayProxy(t, srv.Addr, 4*DefaultTimeout))
	_, _, err := st.Get(context.Background(), "test:k")
	assert.Equal(t, Timeout, storeError(t, err).Kind)

	h, err := st.Health(context.Background())
	require.NoError(t, err, "a slow store is reachable")
	require.Error(t, h.Slow)
	assert.Contains(t, h.Slow.Error(), SetTimeout)
	assert.Greater(t, h.RoundTrip, DefaultTimeout)
}

// TestClusterDown: the cluster client's failures are typed and back off as one node's do.
func TestClusterDown(t *testing.T) {
	srv := storetest.StartCluster(t)
	st, clock := faultStore(t, srv.Addr, func(s *Settings) { s.Cluster = true })
	ctx := context.Background()
	require.NoError(t, st.Set(ctx, "test:{k}", []byte("v"), time.Minute))

	srv.Pause()
	var err error
	for range timeoutStrikes {
		_, _, err = st.Get(ctx, "test:{k}")
		assert.Equal(t, Timeout, storeError(t, err).Kind)
	}
	requireBackingOff(t, st, Timeout)

	// Stopped: the cluster client retries the dead node until the deadline, so operations
	// time out; Save & test looks behind the timeout and names the refusal.
	srv.Resume()
	srv.Stop()
	clock.Add(maxBackoff)
	_, _, err = st.Get(ctx, "test:{k}")
	assert.True(t, IsUnavailable(err), "%v", err)
	requireBackingOff(t, st, storeError(t, err).Kind)
	_, err = st.Health(ctx)
	e := storeError(t, err)
	assert.Equal(t, Refused, e.Kind, e.Error())
	assert.Contains(t, e.Error(), "check "+SetAddresses)
}
