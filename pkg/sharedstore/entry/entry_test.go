package entry_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry/entrytest"
)

func TestRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		e := entrytest.Extent(seed, 1+int(seed%5), 1+int(seed*37%400))
		b, err := entry.Encode(e)
		require.NoError(t, err)
		got, err := entry.Decode(b)
		require.NoError(t, err)
		entrytest.Same(t, e, got)
	}
	empty := entry.Extent{Start: -120_000, End: 0, Step: 60_000}
	b, err := entry.Encode(empty)
	require.NoError(t, err)
	got, err := entry.Decode(b)
	require.NoError(t, err)
	assert.Equal(t, empty.Start, got.Start)
	assert.Equal(t, empty.End, got.End)
	assert.Empty(t, got.Series)
}

func TestEncodeRefuses(t *testing.T) {
	ok := entry.Series{Labels: []entry.Label{{Name: "a", Value: "1"}}, T: []int64{0}, V: []float64{1}}
	tests := []struct {
		name string
		e    entry.Extent
		want string
	}{
		{"no step", entry.Extent{Start: 0, End: 60, Step: 0}, "step must be positive"},
		{"end before start", entry.Extent{Start: 60, End: 0, Step: 60}, "step must be positive"},
		{"step does not divide", entry.Extent{Start: 0, End: 90, Step: 60}, "divide"},
		{"off the grid", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{{T: []int64{30}, V: []float64{1}}}}, "off the grid"},
		{"out of order", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{{T: []int64{60, 0}, V: []float64{1, 2}}}}, "out of order"},
		{"repeated time", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{{T: []int64{60, 60}, V: []float64{1, 2}}}}, "out of order"},
		{"past the end", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{{T: []int64{180}, V: []float64{1}}}}, "past 120"},
		{"lengths differ", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{{T: []int64{0}, V: nil}}}, "1 timestamps and 0 values"},
		{"labels unsorted", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{ok, {Labels: []entry.Label{{Name: "b", Value: "1"}, {Name: "a", Value: "2"}}}}}, "not sorted"},
		{"labels repeated", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{{Labels: []entry.Label{{Name: "a", Value: "1"}, {Name: "a", Value: "2"}}}}}, "not sorted"},
		{"label set repeated", entry.Extent{Start: 0, End: 120, Step: 60, Series: []entry.Series{ok, {Labels: []entry.Label{{Name: "b", Value: "1"}}}, ok}}, "series 0 and 2 have the same labels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := entry.Encode(tc.e)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// withCRC appends a valid checksum, so a test (or the fuzzer) reaches the parser behind it.
func withCRC(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, castagnoli))
}

func header(fields ...uint64) []byte {
	b := []byte{'I', 'S', entry.Version}
	b = binary.AppendVarint(b, 0) // start
	for _, f := range fields {
		b = binary.AppendUvarint(b, f)
	}
	return b
}

func TestDecodeRejects(t *testing.T) {
	good, err := entry.Encode(entrytest.Extent(1, 2, 30))
	require.NoError(t, err)
	body := good[:len(good)-4]
	future := append([]byte(nil), good...)
	future[2] = 9
	// step 60, 10 steps, fetchedAt 0, settled 0 as zigzag varints (0 → 0).
	base := func(rest ...uint64) []byte { return withCRC(append(header(60, 10, 0, 0), uvarints(rest...)...)) }
	tests := []struct {
		name   string
		b      []byte
		reason string
		detail string
	}{
		{"empty", nil, entry.Malformed, "not an extent"},
		{"JSON", []byte(`{"data":[]}`), entry.Malformed, "not an extent"},
		{"a byte flipped", flip(good, len(good)/3), entry.BadChecksum, "CRC32C"},
		{"checksum flipped", flip(good, len(good)-1), entry.BadChecksum, "CRC32C"},
		{"a future version", future, entry.UnknownVersion, "version 9"},
		{"trailing bytes", withCRC(append(append([]byte(nil), body...), 0)), entry.Malformed, "after the last series"},
		{"truncated", withCRC(body[:len(body)-5]), entry.Malformed, ""},
		{"zero step", withCRC(append(header(0, 10, 0, 0), 0, 0)), entry.Malformed, "step 0"},
		{"too many steps", withCRC(append(header(60, entry.MaxSteps+1, 0, 0), 0, 0)), entry.Malformed, "steps"},
		{"step × steps overflows", withCRC(append(header(math.MaxInt64/2, 10, 0, 0), 0, 0)), entry.Malformed, "step"},
		{"a billion strings", base(1 << 30), entry.Malformed, "items"},
		{"a string longer than the entry", base(1, 1<<40), entry.Malformed, "1099511627776 items of at least 1 bytes"},
		{"a billion series", base(0, 1<<30), entry.Malformed, "items"},
		{"a billion samples", base(0, 1, 0, 1<<30), entry.Malformed, "items"},
		{"a label past the string table", base(1, 1, 'a', 1, 1, 0, 5, 0), entry.Malformed, "string 5 of 1"},
		{"a sample past the extent", base(0, 1, 0, 1, 11, 0x80), entry.Malformed, "past the extent"},
		{"a gap that wraps around", base(0, 1, 0, 2, 3, math.MaxUint64-2, 0x80, 0x80), entry.Malformed, "past the extent"},
		{"a value header over 8 bytes", base(0, 1, 0, 1, 0, 0x55), entry.Malformed, "value header"},
		{"a label set twice", base(1, 1, 'a', 2, 1, 0, 0, 0, 1, 0, 0, 0), entry.Malformed, "series 0 and 1 have the same labels"},
		{"no labels twice", base(0, 2, 0, 0, 0, 0), entry.Malformed, "series 0 and 1 have the same labels"},
		{"an overlong varint", withCRC(append(header(), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)), entry.Malformed, "overlong"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := entry.Decode(tc.b)
			var de *entry.DecodeError
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tc.reason, de.Reason, err.Error())
			assert.Contains(t, de.Detail, tc.detail)
		})
	}
	for n := range len(good) { // every truncation: rejected, never a panic
		_, err := entry.Decode(good[:n])
		require.Error(t, err, "%d bytes", n)
	}
}

func uvarints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x01
	return out
}

// FuzzDecode: any input is rejected or decodes to an extent that encodes again to an
// equal extent; nothing panics. Each input is tried as it is and with a valid checksum, so
// mutations reach the parser instead of stopping at the CRC.
func FuzzDecode(f *testing.F) {
	for seed := range uint64(4) {
		// Small seeds: the fuzzer minimizes each new input, at a cost that grows with its size.
		b, err := entry.Encode(entrytest.Extent(seed, 1, 2+int(seed)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:len(b)-4])
	}
	f.Add(header(60, 10, 0, 0))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, b := range [][]byte{body, withCRC(body)} {
			e, err := entry.Decode(b)
			if err != nil {
				var de *entry.DecodeError
				if !assert.ErrorAs(t, err, &de) {
					return
				}
				continue
			}
			again, err := entry.Encode(e)
			require.NoError(t, err, "a decoded extent must encode")
			e2, err := entry.Decode(again)
			if err != nil && len(again) < len(b) {
				// A padded input (unused strings, overlong varints) may encode smaller than
				// it was, and so over the decoding bound for that size: only that is allowed.
				require.ErrorContains(t, err, "may take in memory")
				continue
			}
			require.NoError(t, err)
			entrytest.Same(t, e, e2)
		}
	})
}

// TestReviewDecodeAmplification: checksummed entries of many tiny items (empty strings,
// empty series, labels, samples) are rejected, or decoded, within a few times their size
// in memory; an extent of the most compact legitimate kind (every step, one repeated
// value) still decodes.
func TestReviewDecodeAmplification(t *testing.T) {
	const n = 1 << 20
	many := func(count uint64, item ...uint64) []uint64 {
		out := []uint64{count}
		for range count {
			out = append(out, item...)
		}
		return out
	}
	hostile := func(rest ...[]uint64) []byte {
		var all []uint64
		for _, r := range rest {
			all = append(all, r...)
		}
		return withCRC(append(header(60, n, 0, 0), uvarints(all...)...))
	}
	dense := entry.Extent{Start: 0, End: 1439 * 60_000, Step: 60_000}
	for i := range 200 {
		s := entry.Series{Labels: []entry.Label{{Name: "i", Value: fmt.Sprint(i)}}}
		for k := range 1440 {
			s.T, s.V = append(s.T, int64(k)*60_000), append(s.V, 1)
		}
		dense.Series = append(dense.Series, s)
	}
	denseB, err := entry.Encode(dense)
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		b      []byte
		decode bool
	}{
		{"empty strings", hostile(many(n, 0), []uint64{0}), false},
		{"empty series", hostile([]uint64{0}, many(n, 0, 0)), false},
		{"labels", hostile([]uint64{1, 0, 1, n / 2}, many(n/2, 0, 0)[1:], []uint64{0}), false},
		{"every step, one value", denseB, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			_, err := entry.Decode(tc.b)
			runtime.ReadMemStats(&m1)
			alloc := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("entry %d bytes, decoded in %d bytes (%.1f×): %v", len(tc.b), alloc, float64(alloc)/float64(len(tc.b)), err)
			if tc.decode {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, "may take in memory")
			}
			// The bound, plus the allocator's size classes (at most 1/8 more) and 4 KiB of the
			// runtime's own.
			assert.LessOrEqual(t, alloc, uint64((10*len(tc.b)+64<<10)*9/8+4096), "decoded memory")
		})
	}
}
