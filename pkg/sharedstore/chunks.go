package sharedstore

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
)

// An extent larger than ChunkBytes is stored in chunks, each its own key and operation, so
// no single command carries more than ChunkBytes: at 1 Gbit/s 256 KiB is about 2 ms on the
// wire, well inside the 50 ms per-operation deadline, and a single-threaded Redis is never
// blocked by one large value for long. It is a little under 256 KiB so that a chunk with
// Redis' string header fits the allocator's 256 KiB size class (at exactly 256 KiB Redis
// uses 320 KiB for it). The entry's key then holds a small head naming the chunks'
// generation; a smaller extent stays in the entry's key itself (one round trip).
//
// The head, version 1: the entry's magic "IS", then 0x81 (the version), uvarint total
// length, uvarint chunk size, and the generation token (tokenLen hex digits). The version
// byte has its high bit set, which no entry version takes, so an older plugin counts a
// head as an entry of an unknown version (a miss), never as corruption.
const (
	ChunkBytes = 256<<10 - 64
	headPrefix = "IS\x81"
	tokenLen   = 32 // newToken's hex digits
	// A reader accepts chunk sizes in [minChunk, maxChunk], so a hostile head cannot ask
	// for more than entry.MaxBytes/minChunk reads; a later version may change ChunkBytes
	// within them without breaking a rolling upgrade.
	minChunk = 16 << 10
	maxChunk = 1 << 20
	// chunkGrace keeps a replaced generation's chunks after the swap, for the readers that
	// read the old head just before (a read takes at most chunkedOps deadlines), and a
	// chunk past its head's TTL (written a moment before the head, it would otherwise expire
	// first).
	chunkGrace = 10 * time.Second
	// chunkBatch chunks are read or written per operation, in one pipeline: a quarter of
	// the round trips, and still at most 1 MiB per operation (8 ms at 1 Gbit/s) of small
	// commands.
	chunkBatch = 4
	// chunkedOps store deadlines bound a whole chunked read or write, however many
	// operations it takes: a request waits no longer for a large extent than for a few
	// small ones (a 24 h panel of 1,600 series is 13 operations each way), and a store too
	// slow for that is a store timeout like any other.
	chunkedOps = 4
)

// errChunkedDeadline is the cause of a chunked read's or write's total deadline (chunkedOps):
// its expiry is the store's timeout, not the caller's cancellation.
var errChunkedDeadline = errors.New("a chunked extent's operations together took longer than " + strconv.Itoa(chunkedOps) + " deadlines")

// chunked is ctx under a chunked read's or write's total deadline.
func (st *Store) chunked(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, chunkedOps*st.set.Timeout, errChunkedDeadline)
}

// MissingChunk is the Stats.Rejected reason of a chunked extent whose head names a chunk
// that is gone (expired, evicted, or a replaced generation's): a miss, not corruption.
const MissingChunk = "missing chunk"

// head is a chunked extent's head.
type head struct {
	total, size int
	token       string
}

func (h head) count() int { return (h.total + h.size - 1) / h.size }

func (h head) encode() []byte {
	b := []byte(headPrefix)
	b = binary.AppendUvarint(b, uint64(h.total)) // #nosec G115 -- a length, not negative
	b = binary.AppendUvarint(b, uint64(h.size))  // #nosec G115 -- a length, not negative
	return append(b, h.token...)
}

// isHead says whether b is a head (decodeHead then tells whether it is a valid one).
func isHead(b []byte) bool {
	return len(b) >= len(headPrefix) && string(b[:len(headPrefix)]) == headPrefix
}

// decodeHead decodes a head, trusting nothing in it: the total within entry.MaxBytes, the
// chunk size within its bounds and the token hex digits of its length, before the reader
// asks for a byte or allocates one.
func decodeHead(b []byte) (head, error) {
	if !isHead(b) {
		return head{}, errors.New("not a chunked extent's head")
	}
	b = b[len(headPrefix):]
	total, n := binary.Uvarint(b)
	if n <= 0 || total == 0 || total > entry.MaxBytes {
		return head{}, fmt.Errorf("total length %d (read %d bytes) outside (0, %d]", total, n, entry.MaxBytes)
	}
	b = b[n:]
	size, n := binary.Uvarint(b)
	if n <= 0 || size < minChunk || size > maxChunk {
		return head{}, fmt.Errorf("chunk size %d (read %d bytes) outside [%d, %d]", size, n, minChunk, maxChunk)
	}
	b = b[n:]
	if _, err := hex.DecodeString(string(b)); err != nil || len(b) != tokenLen {
		return head{}, fmt.Errorf("generation token of %d bytes, not %d hex digits", len(b), tokenLen)
	}
	return head{total: int(total), size: int(size), token: string(b)}, nil // #nosec G115 -- both bounded above
}

// chunkKey is chunk i of a generation: the entry's key (and so its cluster hash tag) with
// the generation's token, so a new generation never overwrites a chunk a reader of the
// old head is about to read.
func chunkKey(key, token string, i int) string { return key + ":g" + token + ":" + strconv.Itoa(i) }

// swapScript sets the entry (a small extent or a head) and releases the lease in one step,
// as publishScript does, and gives the new generation's chunks (KEYS[3...], written with
// only the time to get here) the entry's TTL plus chunkGrace. It replies the head it
// replaced (nil when there was none, or a small extent: never a large value), so the writer
// can retire that generation's chunks. A writer whose lease is no longer its own (it ran
// out, and another replica may have published a newer extent since) writes nothing, drops
// its chunks and replies lostLease.
var swapScript = redis.NewScript(`
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then
	for i = 3, #KEYS do
		redis.call('DEL', KEYS[i])
	end
	return -1
end
local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
for i = 3, #KEYS do
	redis.call('PEXPIRE', KEYS[i], ARGV[5])
end
if ARGV[1] ~= '' then
	redis.call('DEL', KEYS[2])
end
if old and string.sub(old, 1, 3) == ARGV[4] then
	return old
end
return false`)

// lostLease is swapScript's reply to a writer that no longer holds its lease.
const lostLease = -1

// putEncoded stores the encoded extent b at key for ttl, under one total deadline: in
// chunks when it is larger than ChunkBytes, then the entry and the release of the lease
// held with leaseToken (none: "") in one script; with a lease this replica no longer holds,
// nothing (counted, Stats.LostLeases). The generation it replaced gets chunkGrace to live.
func (st *Store) putEncoded(ctx context.Context, key string, b []byte, ttl time.Duration, leaseToken string) error {
	if err := atLeastMs("ttl", ttl); err != nil {
		return err
	}
	ctx, cancel := st.chunked(ctx)
	defer cancel()
	val, keys := b, []string{key, LeaseKey(key)}
	if len(b) > ChunkBytes {
		h := head{total: len(b), size: ChunkBytes, token: newToken()}
		if err := st.putChunks(ctx, key, h, b); err != nil {
			if leaseToken != "" { // released at once, so the waiters fetch themselves
				_, rerr := st.run(context.WithoutCancel(ctx), "release lease", releaseScript, []string{LeaseKey(key)}, leaseToken)
				err = errors.Join(err, rerr)
			}
			return err
		}
		val = h.encode()
		for i := range h.count() {
			keys = append(keys, chunkKey(key, h.token, i))
		}
	}
	res, err := st.run(ctx, "publish", swapScript, keys, leaseToken, val, ttl.Milliseconds(), headPrefix, (ttl + chunkGrace).Milliseconds())
	if err != nil || res == nil {
		return ignoreNil(err)
	}
	if n, ok := res.(int64); ok && n == lostLease {
		st.stats.lostLeases.Add(1)
		return nil
	}
	s, _ := res.(string)
	if old, derr := decodeHead([]byte(s)); derr == nil {
		return st.retire(ctx, key, old)
	}
	return nil
}

// putChunks writes h's chunks of b, chunkBatch to a pipelined operation, to live only until
// the swap could have run (so a publish that fails part way leaves them briefly): the swap
// gives them the entry's TTL.
func (st *Store) putChunks(ctx context.Context, key string, h head, b []byte) error {
	for first := 0; first < h.count(); first += chunkBatch {
		err := st.do(ctx, "SET chunks", func(ctx context.Context) error {
			_, err := st.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := first; i < min(first+chunkBatch, h.count()); i++ {
					p.Set(ctx, chunkKey(key, h.token, i), b[i*h.size:min(len(b), (i+1)*h.size)], chunkedOps*st.set.Timeout+chunkGrace)
				}
				return nil
			})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// retire shortens a replaced generation's chunks to chunkGrace, in one pipeline of small
// commands. Should it fail, they end with their TTL.
func (st *Store) retire(ctx context.Context, key string, h head) error {
	return st.do(ctx, "retire chunks", func(ctx context.Context) error {
		_, err := st.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range h.count() {
				p.PExpire(ctx, chunkKey(key, h.token, i), chunkGrace)
			}
			return nil
		})
		return err
	})
}

func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// getEncoded reads the encoded extent at key under one total deadline: the entry itself,
// or a head's chunks, chunkBatch chunks per operation. ok is false on a miss; rejected
// names why an entry that exists was not read whole (a malformed head, a missing or
// wrong-sized chunk).
func (st *Store) getEncoded(ctx context.Context, key string) (b []byte, ok bool, rejected string, err error) {
	ctx, cancel := st.chunked(ctx)
	defer cancel()
	b, ok, err = st.Get(ctx, key)
	if !ok || err != nil || !isHead(b) {
		return b, ok, "", err
	}
	h, derr := decodeHead(b)
	if derr != nil {
		return nil, false, entry.Malformed, nil
	}
	var all []byte
	for first := 0; first < h.count(); first += chunkBatch {
		var cmds []redis.Cmder
		err := st.do(ctx, "GET chunks", func(ctx context.Context) (err error) {
			cmds, err = st.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := first; i < min(first+chunkBatch, h.count()); i++ {
					p.Get(ctx, chunkKey(key, h.token, i))
				}
				return nil
			})
			return err
		})
		switch {
		case errors.Is(err, redis.Nil):
			return nil, false, MissingChunk, nil
		case err != nil:
			return nil, false, "", err
		}
		for j, c := range cmds {
			v := c.(*redis.StringCmd).Val()
			if len(v) != min(h.size, h.total-(first+j)*h.size) {
				return nil, false, entry.Malformed, nil
			}
			// Grown as the chunks arrive, not to the head's total: a hostile head's claimed
			// length costs nothing unless its chunks exist too.
			all = append(all, v...)
		}
	}
	return all, true, "", nil
}
