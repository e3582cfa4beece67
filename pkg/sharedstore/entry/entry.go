// Package entry is the shared store's encoding of a cached range answer: compact,
// versioned and checksummed, and decoded without trusting a byte of it. It has no
// dependency on the store's client, so the results cache can use it directly.
package entry

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"slices"
)

// Extent is a cached range answer in a form independent of pkg/rcache: float samples on
// the grid Start + k·Step (Unix ms) up to End, with when it was fetched and up to when its
// samples are settled (past the re-fetch window).
type Extent struct {
	Start, End, Step int64
	FetchedAt        int64
	Settled          int64
	Series           []Series
}

// Series is one labelled series: T strictly increasing on the extent's grid, V beside it.
type Series struct {
	Labels []Label // sorted by name, names unique
	T      []int64
	V      []float64
}

// Label is one label pair.
type Label struct{ Name, Value string }

// The encoding, version 1 (little-endian CRC, varints elsewhere):
//
//	"IS" version(1)
//	varint start, uvarint step, uvarint steps ((end-start)/step), varint fetchedAt, varint settled
//	uvarint strings, each uvarint length + bytes: every label name and value once
//	uvarint series, each:
//	  uvarint labels, each uvarint name index + uvarint value index
//	  uvarint samples; each sample's grid gap (k − previous k − 1, the first: k) as uvarint;
//	  each value XORed with the previous one's bits: a byte (leading zero bytes << 4 |
//	  trailing zero bytes) and the bytes between
//	CRC32C of all the bytes before it
//
// A series with every step present costs one byte per timestamp; a repeated value one byte.
const (
	magic0, magic1 = 'I', 'S'
	// Version is the encoding's version: a decoder rejects any other.
	Version   = 1
	headerLen = 3
	crcLen    = 4
	// MaxBytes bounds an entry: larger ones are neither written nor decoded.
	MaxBytes = 64 << 20
	// MaxSteps bounds an extent's grid: a year of 2 s steps.
	MaxSteps = 1 << 24
	// An entry decodes to at most memPerByte times its size plus memSlack in memory (each
	// item charged its in-memory size before it is allocated): a sample (16 bytes decoded)
	// takes at least 2 encoded, so every-step series of repeated values reach 8× (a panel
	// of noisy values 2-3×; the margin is for short series with short labels), while a
	// hostile entry of empty strings, labels or series would reach 16×, 16× or 36×. The
	// slack covers a small entry's fixed costs.
	memPerByte = 10
	memSlack   = 64 << 10
)

// The in-memory sizes charged against the decoding bound.
const (
	stringMem = 16 // a string header (its bytes are charged as they are)
	seriesMem = 72 // a Series: three slice headers
	labelMem  = 32 // a Label: two string headers
	sampleMem = 16 // a timestamp and a value
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Rejection reasons, the DecodeError's Reason.
const (
	BadChecksum    = "bad checksum"
	UnknownVersion = "unknown version"
	Malformed      = "malformed"
)

// DecodeError is an entry that is not trusted. Reason is one of BadChecksum,
// UnknownVersion or Malformed.
type DecodeError struct {
	Reason, Detail string
}

func (e *DecodeError) Error() string {
	return "shared cache entry rejected (" + e.Reason + "): " + e.Detail
}

func malformed(format string, args ...any) error {
	return &DecodeError{Reason: Malformed, Detail: fmt.Sprintf(format, args...)}
}

// Encode encodes e; an error names what does not fit the format (a sample off the
// grid, labels out of order).
func Encode(e Extent) ([]byte, error) {
	if e.Step <= 0 || e.End < e.Start || (e.End-e.Start)%e.Step != 0 || (e.End-e.Start)/e.Step > MaxSteps {
		return nil, fmt.Errorf("extent [%d, %d] step %d: the step must be positive and divide the extent, of at most %d steps", e.Start, e.End, e.Step, MaxSteps)
	}
	strs := map[string]uint64{}
	var table []string
	intern := func(s string) uint64 {
		i, ok := strs[s]
		if !ok {
			i = uint64(len(table))
			strs[s] = i
			table = append(table, s)
		}
		return i
	}
	for i, s := range e.Series {
		if len(s.T) != len(s.V) {
			return nil, fmt.Errorf("series %d has %d timestamps and %d values", i, len(s.T), len(s.V))
		}
		for j, l := range s.Labels {
			if j > 0 && s.Labels[j-1].Name >= l.Name {
				return nil, fmt.Errorf("series %d: labels not sorted by unique name (%q after %q)", i, l.Name, s.Labels[j-1].Name)
			}
			intern(l.Name)
			intern(l.Value)
		}
	}
	if i, j, dup := sameLabels(e.Series); dup {
		return nil, fmt.Errorf("series %d and %d have the same labels: an extent holds one series per label set", i, j)
	}
	b := []byte{magic0, magic1, Version}
	b = binary.AppendVarint(b, e.Start)
	b = binary.AppendUvarint(b, uint64(e.Step))
	b = binary.AppendUvarint(b, uint64((e.End-e.Start)/e.Step)) // #nosec G115 -- End ≥ Start was checked above
	b = binary.AppendVarint(b, e.FetchedAt)
	b = binary.AppendVarint(b, e.Settled)
	b = binary.AppendUvarint(b, uint64(len(table)))
	for _, s := range table {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Series)))
	for i, s := range e.Series {
		b = binary.AppendUvarint(b, uint64(len(s.Labels)))
		for _, l := range s.Labels {
			b = binary.AppendUvarint(b, strs[l.Name])
			b = binary.AppendUvarint(b, strs[l.Value])
		}
		b = binary.AppendUvarint(b, uint64(len(s.T)))
		next := e.Start // the first grid time the next sample may have
		for _, t := range s.T {
			if t < next || t > e.End || (t-e.Start)%e.Step != 0 {
				return nil, fmt.Errorf("series %d: sample at %d is off the grid %d + k·%d, out of order or past %d", i, t, e.Start, e.Step, e.End)
			}
			b = binary.AppendUvarint(b, uint64((t-next)/e.Step)) // #nosec G115 -- t ≥ next was checked above
			next = t + e.Step
		}
		var prev uint64
		for _, v := range s.V {
			cur := math.Float64bits(v)
			b = appendXOR(b, cur^prev)
			prev = cur
		}
	}
	if len(b)+crcLen > MaxBytes {
		return nil, fmt.Errorf("the extent encodes to %d bytes, over the %d an entry may have", len(b)+crcLen, MaxBytes)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

func appendXOR(b []byte, x uint64) []byte {
	lz, tz := bits.LeadingZeros64(x)/8, 0
	if x != 0 {
		tz = bits.TrailingZeros64(x) / 8
	}
	b = append(b, byte(lz<<4|tz)) // #nosec G115 -- lz ≤ 8 and tz ≤ 7: one byte
	for i := 7 - lz; i >= tz; i-- {
		b = append(b, byte(x>>(8*i))) // #nosec G115 -- the byte is meant to be cut out
	}
	return b
}

// Decode decodes an entry. It trusts nothing in it: the checksum and version are
// checked first, and every count is checked against the bytes left and the memory bound
// (memPerByte) before anything is allocated for it, so a hostile entry costs at most a few
// times its own size. Two series of one label set are malformed (Encode refuses them too).
func Decode(b []byte) (Extent, error) {
	if len(b) < headerLen+crcLen || b[0] != magic0 || b[1] != magic1 {
		return Extent{}, malformed("not an extent entry (%d bytes)", len(b))
	}
	if b[2] != Version {
		return Extent{}, &DecodeError{Reason: UnknownVersion, Detail: fmt.Sprintf("version %d; this plugin reads %d (another plugin version wrote it)", b[2], Version)}
	}
	if len(b) > MaxBytes {
		return Extent{}, malformed("%d bytes, over %d", len(b), MaxBytes)
	}
	body := b[:len(b)-crcLen]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-crcLen:]); got != want {
		return Extent{}, &DecodeError{Reason: BadChecksum, Detail: fmt.Sprintf("CRC32C %08x, stored %08x", got, want)}
	}
	d := decoder{b: body[headerLen:], mem: memPerByte*len(b) + memSlack}
	var e Extent
	e.Start = d.varint()
	step, steps := d.uvarint(), d.uvarint()
	e.FetchedAt, e.Settled = d.varint(), d.varint()
	if d.err != nil {
		return Extent{}, d.err
	}
	if step == 0 || step > math.MaxInt64/MaxSteps || steps > MaxSteps || e.Start > math.MaxInt64-int64(step*steps) { // #nosec G115 -- step·steps ≤ MaxInt64 by the checks before it
		return Extent{}, malformed("step %d × %d steps from %d", step, steps, e.Start)
	}
	e.Step, e.End = int64(step), e.Start+int64(step*steps) // #nosec G115 -- checked on the line above
	table := make([]string, d.items(1, stringMem))
	for i := range table {
		table[i] = string(d.bytes(d.items(1, 1)))
	}
	str := func() string {
		i := d.uvarint()
		if i >= uint64(len(table)) {
			d.fail("string %d of %d", i, len(table))
			return ""
		}
		return table[i]
	}
	e.Series = make([]Series, d.items(2, seriesMem)) // a series is at least its two counts
	for i := range e.Series {
		s := &e.Series[i]
		s.Labels = make([]Label, d.items(2, labelMem))
		for j := range s.Labels {
			s.Labels[j] = Label{Name: str(), Value: str()}
			if j > 0 && s.Labels[j-1].Name >= s.Labels[j].Name {
				d.fail("series %d: labels not sorted by unique name", i)
			}
		}
		n := d.items(2, sampleMem) // a sample is at least a gap byte and a value byte
		s.T, s.V = make([]int64, n), make([]float64, n)
		k := uint64(0) // the next grid index a sample may have
		for j := range s.T {
			gap := d.uvarint()
			if gap > steps-min(k, steps) || k > steps {
				d.fail("series %d: sample %d past the extent", i, j)
				break
			}
			k += gap
			s.T[j] = e.Start + int64(k)*e.Step // #nosec G115 -- k ≤ steps, and Start + steps·Step was checked
			k++
		}
		var prev uint64
		for j := range s.V {
			prev ^= d.xor()
			s.V[j] = math.Float64frombits(prev)
		}
		if d.err != nil {
			return Extent{}, d.err
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the last series", len(d.b))
	}
	if d.err != nil {
		return Extent{}, d.err
	}
	// Merging two series of one label set would give it samples twice.
	if d.charge(len(e.Series), 8); d.err != nil { // sameLabels' order of the series
		return Extent{}, d.err
	}
	if i, j, dup := sameLabels(e.Series); dup {
		return Extent{}, malformed("series %d and %d have the same labels", i, j)
	}
	return e, nil
}

// sameLabels finds two series with the same label set (labels sorted by name).
func sameLabels(series []Series) (int, int, bool) {
	order := make([]int, len(series))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return compareLabels(series[a].Labels, series[b].Labels) })
	for k := 1; k < len(order); k++ {
		if compareLabels(series[order[k-1]].Labels, series[order[k]].Labels) == 0 {
			return min(order[k-1], order[k]), max(order[k-1], order[k]), true
		}
	}
	return 0, 0, false
}

func compareLabels(a, b []Label) int {
	return slices.CompareFunc(a, b, func(x, y Label) int { return cmp.Or(cmp.Compare(x.Name, y.Name), cmp.Compare(x.Value, y.Value)) })
}

// decoder reads varints; its first failure sticks and every later read yields zero. mem is
// what the decoded extent may still take in memory.
type decoder struct {
	b   []byte
	mem int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = malformed(format, args...)
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated or overlong number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("truncated or overlong number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items each at least min bytes long: one the bytes left cannot
// hold is malformed, which bounds what is allocated for it.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) { // #nosec G115 -- a length is never negative
		d.fail("%d items of at least %d bytes in %d bytes", n, min, len(d.b))
		return 0
	}
	return int(n) // #nosec G115 -- n ≤ len(d.b), checked above
}

// items reads a count of items each at least min bytes long and size bytes in memory,
// charged before they are allocated: zero, and malformed, past the bound.
func (d *decoder) items(min, size int) int { return d.charge(d.count(min), size) }

// charge takes n items of size bytes from what the extent may still take in memory: n, or
// zero (and malformed) past the bound.
func (d *decoder) charge(n, size int) int {
	if n > d.mem/size {
		d.fail("%d items of %d bytes decoded: over the %d bytes an entry of its size may take in memory", n, size, d.mem)
		return 0
	}
	d.mem -= n * size
	return n
}

func (d *decoder) bytes(n int) []byte {
	if n > len(d.b) {
		d.fail("truncated string")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) xor() uint64 {
	if len(d.b) == 0 {
		d.fail("truncated value")
		return 0
	}
	lz, tz := int(d.b[0]>>4), int(d.b[0]&15)
	if lz+tz > 8 {
		d.fail("value header %#x", d.b[0])
		return 0
	}
	raw := d.bytes(8 - lz - tz + 1)
	if raw == nil {
		return 0
	}
	var x uint64
	for _, c := range raw[1:] {
		x = x<<8 | uint64(c)
	}
	return x << (8 * tz)
}
