package sharedstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
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

// noisyExtent is a large panel's extent: series GPUs' utilization over steps one-minute
// steps, each value random with two decimals (about 9 encoded bytes a sample, the large
// panel's worst case in docs/high-availability.md).
func noisyExtent(seed uint64, series, steps int) entry.Extent {
	r := rand.New(rand.NewPCG(seed, 3)) // #nosec G404 -- seeded test data
	const step = 60_000
	start := int64(1_790_000_000_000) / step * step
	e := entry.Extent{Start: start, End: start + int64(steps-1)*step, Step: step, FetchedAt: start + int64(steps)*step, Settled: start + int64(steps-3)*step}
	for i := range series {
		s := entry.Series{Labels: []entry.Label{{Name: "gpu", Value: fmt.Sprint(i % 8)}, {Name: "instance_id", Value: fmt.Sprintf("i-%017x", i/8)}}}
		for k := range steps {
			s.T = append(s.T, start+int64(k)*step)
			s.V = append(s.V, float64(r.IntN(10001))/100)
		}
		e.Series = append(e.Series, s)
	}
	return e
}

// sizes is a go-redis hook that records the largest command the client sent or received
// (its arguments and its reply), so a test sees what one operation carries.
type sizes struct {
	mu      sync.Mutex
	largest int
	name    string
}

func (h *sizes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.record(cmd)
		return err
	}
}

func (h *sizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.record(c)
		}
		return err
	}
}

func (h *sizes) record(cmd redis.Cmder) {
	n := 0
	for _, a := range cmd.Args() {
		switch v := a.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		default:
			n += 20 // a number
		}
	}
	switch c := cmd.(type) {
	case *redis.StringCmd:
		n += len(c.Val())
	case *redis.Cmd:
		s, _ := c.Val().(string)
		n += len(s)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n > h.largest {
		h.largest, h.name = n, cmd.Name()
	}
}

func chunkKeys(t *testing.T, raw *redis.Client) []string {
	t.Helper()
	keys, err := raw.Keys(context.Background(), "*:g*:*").Result()
	require.NoError(t, err)
	return keys
}

// TestChunkedExtentRoundTrip: a 5 MB extent (1,600 noisy series × 360 steps) goes through
// the store in chunks with the default 50 ms deadline, and no command, written or read,
// carries more than a chunk (plus its key): the single value of the unchunked design
// carried all of it (about 42 ms at 1 Gbit/s, near the deadline). A small extent stays in
// its key alone.
func TestChunkedExtentRoundTrip(t *testing.T) {
	srv := storetest.Start(t)
	raw := rawClient(t, srv.Addr)
	fast := func(s *Settings) { s.Timeout = DefaultTimeout }
	sa, sb := openStore(t, srv.Addr, fast), openStore(t, srv.Addr, fast)
	seen := &sizes{}
	sa.rdb.AddHook(seen)
	sb.rdb.AddHook(seen)
	a, b := testPeer(t, sa, "ds1"), testPeer(t, sb, "ds1")
	ctx := context.Background()

	big := noisyExtent(1, 1600, 360)
	enc := mustEncode(t, big)
	require.Greater(t, len(enc), 5_000_000, "the large panel's extent")
	c, err := a.Claim(ctx, "big", time.Hour)
	require.NoError(t, err)
	require.NotNil(t, c)
	require.NoError(t, c.Publish(ctx, big, time.Hour))
	got, ok, err := b.GetExtent(ctx, "big")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, enc, mustEncode(t, got), "the extent as published")

	assert.LessOrEqual(t, seen.largest, ChunkBytes+1024, "largest command %s", seen.name)
	assert.Greater(t, len(enc), 15*seen.largest, "the unchunked design's one value against the largest command now")
	keys := chunkKeys(t, raw)
	assert.Len(t, keys, (len(enc)+ChunkBytes-1)/ChunkBytes)
	head, err := raw.Get(ctx, a.extentKey("big")).Bytes()
	require.NoError(t, err)
	assert.Less(t, len(head), 64, "the head is small")
	for _, k := range keys {
		assert.True(t, strings.HasPrefix(k, a.extentKey("big")+":g"), "%s carries the entry's key and hash tag", k)
		assert.Greater(t, raw.PTTL(ctx, k).Val(), raw.PTTL(ctx, a.extentKey("big")).Val(), "%s outlives its head", k)
	}
	held, err := b.Claim(ctx, "big", time.Minute)
	require.NoError(t, err)
	assert.NotNil(t, held, "the publish released the claim")
	require.NoError(t, held.Release(ctx))

	small := entrytest.Extent(2, 2, 60)
	require.NoError(t, sa.PutExtent(ctx, "test:{small}", small, time.Minute))
	v, err := raw.Get(ctx, "test:{small}").Bytes()
	require.NoError(t, err)
	assert.Equal(t, mustEncode(t, small), v, "a small extent is its key's value, as before chunks")
	assert.Equal(t, map[string]int64{entry.BadChecksum: 0, entry.UnknownVersion: 0, entry.Malformed: 0, MissingChunk: 0}, sb.Stats().Rejected)
}

// TestChunkedExtentReplaced: a new generation retires the old one's chunks to chunkGrace
// (so readers of the old head still finish), whether the new extent is chunked or small.
func TestChunkedExtentReplaced(t *testing.T) {
	srv := storetest.Start(t)
	raw := rawClient(t, srv.Addr)
	st := openStore(t, srv.Addr)
	ctx := context.Background()
	const key = "test:{x}"
	require.NoError(t, st.PutExtent(ctx, key, noisyExtent(1, 200, 360), time.Hour))
	first := chunkKeys(t, raw)
	require.NotEmpty(t, first)
	for i, next := range []entry.Extent{noisyExtent(2, 200, 360), entrytest.Extent(3, 1, 10)} {
		require.NoError(t, st.PutExtent(ctx, key, next, time.Hour))
		got, ok, err := st.GetExtent(ctx, key)
		require.NoError(t, err)
		require.True(t, ok)
		entrytest.Same(t, next, got)
		for _, k := range first {
			ttl := raw.PTTL(ctx, k).Val()
			assert.True(t, ttl > 0 && ttl <= chunkGrace, "publish %d: the replaced chunk %s lives %s, want at most %s", i, k, ttl, chunkGrace)
		}
		first = liveChunks(t, raw)
	}
	assert.Empty(t, first, "a small extent leaves no live chunks behind")
}

// liveChunks are the chunk keys that live longer than chunkGrace: the current generation's.
func liveChunks(t *testing.T, raw *redis.Client) []string {
	t.Helper()
	var live []string
	for _, k := range chunkKeys(t, raw) {
		if raw.PTTL(context.Background(), k).Val() > chunkGrace {
			live = append(live, k)
		}
	}
	return live
}

// TestChunkedPublishFails: when a chunk cannot be written (the store is full), Publish
// reports the store's failure, stores no head, and releases the claim so that waiters
// fetch themselves.
func TestChunkedPublishFails(t *testing.T) {
	srv := storetest.Start(t)
	raw := rawClient(t, srv.Addr)
	p := testPeer(t, openStore(t, srv.Addr), "ds1")
	ctx := context.Background()
	c, err := p.Claim(ctx, "x", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, c)
	used := raw.Info(ctx, "memory").Val()
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	// Room for a few chunks, not all: the publish fails part way.
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory", fmt.Sprint(usedMemory(t, used)+8*ChunkBytes)).Err())
	err = c.Publish(ctx, noisyExtent(1, 1600, 360), time.Minute)
	assert.Equal(t, Full, storeError(t, err).Kind, "%v", err)
	written := chunkKeys(t, raw)
	assert.NotEmpty(t, written, "some chunks were written")
	for _, k := range written {
		ttl := raw.PTTL(ctx, k).Val()
		assert.True(t, ttl > 0 && ttl <= chunkedOps*p.st.set.Timeout+chunkGrace, "the orphaned chunk %s lives %s, want at most until the swap could have run", k, ttl)
	}
	require.NoError(t, raw.ConfigSet(ctx, "maxmemory", "0").Err())
	assert.Zero(t, raw.Exists(ctx, p.extentKey("x")).Val(), "no head for a partial generation")
	again, err := p.Claim(ctx, "x", time.Minute)
	require.NoError(t, err)
	assert.NotNil(t, again, "the failed publish released the claim")
}

// usedMemory is INFO memory's used_memory.
func usedMemory(t *testing.T, info string) int {
	t.Helper()
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			var n int
			_, err := fmt.Sscan(v, &n)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no used_memory in %q", info)
	return 0
}

// TestChunkedExtentRejected: a chunk gone, of the wrong size or flipped, and heads a hostile
// writer could leave, are misses counted by reason; none panics or allocates the head's
// claimed total.
func TestChunkedExtentRejected(t *testing.T) {
	srv := storetest.Start(t)
	raw := rawClient(t, srv.Addr)
	st := openStore(t, srv.Addr)
	ctx := context.Background()
	const key = "test:{x}"
	e := noisyExtent(1, 200, 360)
	token := strings.Repeat("ab", tokenLen/2)
	hostile := func(total, size uint64, tok string) []byte {
		b := binary.AppendUvarint([]byte(headPrefix), total)
		return append(binary.AppendUvarint(b, size), tok...)
	}
	for _, tc := range []struct {
		name, reason string
		spoil        func(t *testing.T, chunks []string)
	}{
		{"chunk deleted", MissingChunk, func(t *testing.T, chunks []string) { raw.Del(ctx, chunks[len(chunks)/2]) }},
		{"chunk lengthened", entry.Malformed, func(t *testing.T, chunks []string) { raw.SetRange(ctx, chunks[0], ChunkBytes, "x") }},
		{"chunk flipped", entry.BadChecksum, func(t *testing.T, chunks []string) {
			b := raw.Get(ctx, chunks[0]).Val()
			raw.SetRange(ctx, chunks[0], 100, string(b[100]^0x20))
		}},
		{"a chunk of another generation (a mix)", entry.BadChecksum, func(t *testing.T, _ []string) {
			// Were generations ever mixed, the CRC over the whole would refuse it.
			require.NoError(t, st.PutExtent(ctx, "test:{y}", noisyExtent(2, 200, 360), time.Hour))
			first := func(entryKey string) string {
				k, err := raw.Keys(ctx, entryKey+":g*:0").Result()
				require.NoError(t, err)
				require.Len(t, k, 1)
				return k[0]
			}
			require.NoError(t, raw.Copy(ctx, first("test:{y}"), first(key), 0, true).Err())
		}},
		{"the largest head, no chunks", MissingChunk, func(t *testing.T, _ []string) { raw.Set(ctx, key, hostile(entry.MaxBytes, minChunk, token), 0) }},
		{"total over the bound", entry.Malformed, func(t *testing.T, _ []string) { raw.Set(ctx, key, hostile(entry.MaxBytes+1, ChunkBytes, token), 0) }},
		{"total negative as int64", entry.Malformed, func(t *testing.T, _ []string) { raw.Set(ctx, key, hostile(1<<63, ChunkBytes, token), 0) }},
		{"zero total", entry.Malformed, func(t *testing.T, _ []string) { raw.Set(ctx, key, hostile(0, ChunkBytes, token), 0) }},
		{"tiny chunks (a huge count)", entry.Malformed, func(t *testing.T, _ []string) { raw.Set(ctx, key, hostile(entry.MaxBytes, 1, token), 0) }},
		{"token not hex", entry.Malformed, func(t *testing.T, _ []string) {
			raw.Set(ctx, key, hostile(1<<20, ChunkBytes, strings.Repeat("*", tokenLen)), 0)
		}},
		{"token of another length", entry.Malformed, func(t *testing.T, _ []string) { raw.Set(ctx, key, hostile(1<<20, ChunkBytes, token+"ab"), 0) }},
		{"truncated head", entry.Malformed, func(t *testing.T, _ []string) { raw.Set(ctx, key, headPrefix+"\xff", 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, raw.FlushAll(ctx).Err())
			require.NoError(t, st.PutExtent(ctx, key, e, time.Hour))
			chunks := chunkKeys(t, raw)
			require.Greater(t, len(chunks), 2)
			tc.spoil(t, chunks)
			before := st.Stats().Rejected
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, ok, err := st.GetExtent(ctx, key)
			runtime.ReadMemStats(&m1)
			require.NoError(t, err)
			assert.False(t, ok, "served as a miss")
			after := st.Stats().Rejected
			for reason, n := range after {
				want := before[reason]
				if reason == tc.reason {
					want++
				}
				assert.Equal(t, want, n, "rejected %q", reason)
			}
			if tc.reason != entry.BadChecksum && tc.name != "chunk lengthened" {
				// The only large allocations are the chunks actually read (none, or all
				// but some); the hostile total (64 MiB) is never allocated.
				assert.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(2*len(mustEncode(t, e))), "bytes allocated")
			}
		})
	}
}

// TestChunkedExtentConcurrentPublish: while one replica publishes generation after
// generation of a large extent, another reads: each read is a whole generation or a
// miss, never a mix (which the CRC would catch, counted as a bad checksum).
func TestChunkedExtentConcurrentPublish(t *testing.T) {
	srv := storetest.Start(t)
	w, r := openStore(t, srv.Addr), openStore(t, srv.Addr)
	ctx := context.Background()
	const key = "test:{x}"
	gens := []entry.Extent{noisyExtent(1, 200, 360), noisyExtent(2, 200, 360)}
	want := [][]byte{mustEncode(t, gens[0]), mustEncode(t, gens[1])}
	require.NoError(t, w.PutExtent(ctx, key, gens[0], time.Hour))
	done := make(chan error, 1)
	go func() {
		for i := range 30 {
			if err := w.PutExtent(ctx, key, gens[(i+1)%2], time.Hour); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	reads, whole := 0, [2]int{}
	for finished := false; !finished; reads++ {
		select {
		case err := <-done:
			require.NoError(t, err)
			finished = true
		default:
		}
		got, ok, err := r.GetExtent(ctx, key)
		require.NoError(t, err)
		if !ok {
			continue
		}
		enc := mustEncode(t, got)
		switch {
		case bytes.Equal(enc, want[0]):
			whole[0]++
		case bytes.Equal(enc, want[1]):
			whole[1]++
		default:
			t.Fatalf("read %d is neither generation", reads)
		}
	}
	assert.Zero(t, r.Stats().Rejected[entry.BadChecksum], "no mixed generations")
	t.Logf("%d reads while publishing: %v whole per generation, %v rejected", reads, whole, r.Stats().Rejected)
}

// FuzzDecodeHead: any bytes decode to a bounded head or an error, never a panic.
func FuzzDecodeHead(f *testing.F) {
	f.Add(head{total: 5 << 20, size: ChunkBytes, token: newToken()}.encode())
	f.Add([]byte(headPrefix))
	f.Add([]byte(headPrefix + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add([]byte("IS\x01garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHead(b)
		if err != nil {
			return
		}
		if h.total <= 0 || h.total > entry.MaxBytes || h.size < minChunk || h.size > maxChunk || len(h.token) != tokenLen {
			t.Fatalf("unbounded head %+v from %q", h, b)
		}
		if n := h.count(); n < 1 || n > entry.MaxBytes/minChunk || (n-1)*h.size >= h.total {
			t.Fatalf("head %+v has %d chunks", h, n)
		}
	})
}

// TestReviewExpiredClaimClobbersNewer: replica A's lease runs out while it fetches; B
// claims, fetches later data and publishes; A's late publish of its older fetch then
// writes nothing (counted) and, chunked, leaves none of its chunks behind.
func TestReviewExpiredClaimClobbersNewer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		extent func() entry.Extent
	}{
		{"small", func() entry.Extent { return entrytest.Extent(1, 2, 30) }},
		{"chunked", func() entry.Extent { return noisyExtent(1, 200, 360) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := storetest.Start(t)
			raw := rawClient(t, srv.Addr)
			sa := openStore(t, srv.Addr)
			a, b := testPeer(t, sa, "ds1"), testPeer(t, openStore(t, srv.Addr), "ds1")
			ctx := context.Background()
			ca, err := a.Claim(ctx, "x", 50*time.Millisecond)
			require.NoError(t, err)
			require.NotNil(t, ca)
			for raw.Exists(ctx, LeaseKey(a.extentKey("x"))).Val() == 1 { // A's fetch outlives its lease
				time.Sleep(10 * time.Millisecond)
			}
			cb, err := b.Claim(ctx, "x", time.Minute)
			require.NoError(t, err)
			require.NotNil(t, cb)
			older, newer := tc.extent(), tc.extent()
			older.FetchedAt, newer.FetchedAt = 1000, 2000
			require.NoError(t, cb.Publish(ctx, newer, time.Hour))
			published := chunkKeys(t, raw)
			require.NoError(t, ca.Publish(ctx, older, time.Hour), "a lost lease is not the store's failure")
			got, ok, err := b.GetExtent(ctx, "x")
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, newer.FetchedAt, got.FetchedAt, "the expired holder's older fetch replaced the newer one")
			assert.Equal(t, int64(1), sa.Stats().LostLeases)
			assert.ElementsMatch(t, published, chunkKeys(t, raw), "only the published generation's chunks")
		})
	}
}

// TestReviewChunkedOps: a 24 h panel of a 200 × 8 GPU fleet at a 1-minute step (about
// 12.5 MB) is written and read chunkBatch chunks to an operation, each way one operation
// per batch plus the head's.
func TestReviewChunkedOps(t *testing.T) {
	srv := storetest.Start(t)
	st := openStore(t, srv.Addr)
	p := testPeer(t, st, "ds1")
	ctx := context.Background()
	e := entrytest.Extent(1, 200, 1440)
	b := mustEncode(t, e)
	batches := int64((len(b)/ChunkBytes + 1 + chunkBatch - 1) / chunkBatch)
	c, err := p.Claim(ctx, "x", time.Minute)
	require.NoError(t, err)
	o0 := st.Stats().Ops
	require.NoError(t, c.Publish(ctx, e, time.Hour))
	o1 := st.Stats().Ops
	_, ok, err := p.GetExtent(ctx, "x")
	require.NoError(t, err)
	require.True(t, ok)
	t.Logf("extent %d bytes: publish %d operations, read %d", len(b), o1-o0, st.Stats().Ops-o1)
	assert.Equal(t, batches+1, o1-o0, "publish: the chunk batches and the swap")
	assert.Equal(t, batches+1, st.Stats().Ops-o1, "read: the head and the chunk batches")
}

// slowOps is a go-redis hook that delays every operation by d (once: go-redis may pass a
// pipeline through the hook twice).
type slowOps struct{ d time.Duration }

type delayed struct{}

func (h slowOps) delay(ctx context.Context) context.Context {
	if ctx.Value(delayed{}) == nil {
		time.Sleep(h.d)
	}
	return context.WithValue(ctx, delayed{}, true)
}

func (h slowOps) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h slowOps) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return next(h.delay(ctx), cmd) }
}

func (h slowOps) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return next(h.delay(ctx), cmds) }
}

// TestChunkedTotalDeadline: each operation of a chunked read and write within its own
// deadline, but all of them together longer than chunkedOps deadlines: the request does
// not wait for the rest, and it is the store's timeout.
func TestChunkedTotalDeadline(t *testing.T) {
	srv := storetest.Start(t)
	// Each operation delayed by 3/5 of its deadline: the rest is slack for a loaded machine.
	const timeout, delay = 400 * time.Millisecond, 240 * time.Millisecond
	slow := func() *Store {
		st := openStore(t, srv.Addr, func(s *Settings) { s.Timeout = timeout })
		_, _, err := st.Get(context.Background(), "test:{x}:warm") // connected before the delay
		require.NoError(t, err)
		st.rdb.AddHook(slowOps{d: delay})
		return st
	}
	ctx := context.Background()
	const key = "test:{x}"
	e := noisyExtent(1, 2000, 360)
	chunks := (len(mustEncode(t, e)) + ChunkBytes - 1) / ChunkBytes
	ops := 1 + (chunks+chunkBatch-1)/chunkBatch // each way: the batches and the head's
	require.Greater(t, time.Duration(ops)*delay, chunkedOps*timeout, "more operations than chunkedOps deadlines hold, delayed")
	require.NoError(t, openStore(t, srv.Addr).PutExtent(ctx, key, e, time.Hour))
	_, _, err := slow().GetExtent(ctx, key)
	assert.Equal(t, Timeout, storeError(t, err).Kind, "%v", err)
	assert.ErrorIs(t, err, errChunkedDeadline)
	err = slow().PutExtent(ctx, key, e, time.Hour)
	assert.Equal(t, Timeout, storeError(t, err).Kind, "%v", err)
	assert.ErrorIs(t, err, errChunkedDeadline)
}
