package rcache

import (
	"context"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// Size accounting and the LRU: each entry's bytes (times arrays shared between series
// counted once), the wait for an entry's lock, and eviction of the least recently used
// entries beyond MaxBytes.

// answerSize is an instant answer's memory in bytes.
func answerSize(a *promclient.Answer) int64 {
	n := int64(256 + len(a.Text))
	counted := map[*int64]bool{}
	for _, s := range a.Series {
		n += seriesSize(s, counted)
	}
	return n
}

// acquire finds or creates the named entry and takes its lock (or gives up with ctx).
func (c *Cache) acquire(ctx context.Context, name string) (*entry, error) {
	c.mu.Lock()
	ent, ok := c.entries[name]
	if !ok {
		ent = &entry{name: name, lock: make(chan struct{}, 1)}
		ent.elem = c.lru.PushFront(ent)
		c.entries[name] = ent
	} else {
		c.lru.MoveToFront(ent.elem)
	}
	c.mu.Unlock()
	select {
	case ent.lock <- struct{}{}:
		return ent, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// releaseEntry books the entry's new size and evicts least recently used entries (never
// the one just used, unless it alone is over the limit) until the cache fits.
func (c *Cache) releaseEntry(ent *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { <-ent.lock }()
	if ent.evicted {
		return
	}
	c.bytes += ent.bytes - ent.booked
	ent.booked = ent.bytes
	for c.bytes > c.opts.MaxBytes && c.lru.Len() > 0 {
		victim := c.lru.Back().Value.(*entry)
		if victim == ent && c.lru.Len() > 1 {
			c.lru.MoveToFront(ent.elem)
			continue
		}
		c.evict(victim)
	}
}

func (c *Cache) evict(ent *entry) {
	c.lru.Remove(ent.elem)
	delete(c.entries, ent.name)
	c.bytes -= ent.booked
	ent.evicted = true
	c.stats.Evictions++
	publish(Stats{Evictions: 1})
}

func (e *entry) size() int64 {
	n := int64(len(e.name)) + 256
	counted := map[*int64]bool{}
	for _, s := range e.series {
		n += s.size(counted)
	}
	return n
}

// size is the series' memory in bytes: its samples and labels, and its label pairs; a T
// array in counted is not counted again.
func (s *series) size(counted map[*int64]bool) int64 {
	n := seriesSize(s.Series, counted) + 24
	for _, l := range s.pairs {
		n += int64(len(l)) + 16
	}
	return n
}

// seriesSize is a decoded series' memory in bytes: the labels map and the sample arrays
// as allocated, a T array in counted not again (series share them).
func seriesSize(s promclient.Series, counted map[*int64]bool) int64 {
	n := int64(136) // the series' slice headers and map header
	for k, v := range s.Labels {
		n += int64(len(k)+len(v)) + 48 // the strings, their headers, the map slot
	}
	if cap(s.T) > 0 && !counted[&s.T[:1][0]] {
		counted[&s.T[:1][0]] = true
		n += 8 * int64(cap(s.T))
	}
	n += 8 * int64(cap(s.V))
	for _, h := range s.Histograms {
		n += 32 + 32*int64(cap(h.Buckets))
	}
	return n
}
