package replicas_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/entry"
	"github.com/inferscope/sagemaker-datasource/rig/dashload"
)

// hits are panel answers (the panel's QueryData through the plugin protocol) that made no
// upstream call: read from the store by a replica that never asked, then from the same
// replica's memory.
type hits struct {
	store, local []time.Duration
	panels       int // panels asked in each pass
}

// measureHits starts a new replica of a data source whose panels the other replicas have
// just loaded and asks every panel alone, one after another, twice: the first pass reads
// the store, the second the replica's own cache. Only panels that made no upstream call
// count.
func measureHits(tb testing.TB, r *rig, ds *backend.DataSourceInstanceSettings, dashes []dashload.Dashboard) hits {
	reps, stop := r.replicas(tb, 1, ds, 1)
	defer stop()
	var h hits
	for pass, into := range []*[]time.Duration{&h.store, &h.local} {
		for _, d := range dashes {
			for _, p := range d.Panels {
				if pass == 0 {
					h.panels++
				}
				res := dashload.Load(reps[0].client, r.meter, dashload.Dashboard{Name: d.Name, Panels: []dashload.Panel{p}}, time.Now())
				if len(res.Calls) == 0 && len(res.Failed) == 0 {
					*into = append(*into, res.PanelTime[p.Key])
				}
			}
		}
	}
	return h
}

// storeMemory is what the store holds: its used memory, and the extents' keys (MEMORY
// USAGE) against the samples in them (decoded with the entry codec).
type storeMemory struct {
	used, extentBytes int64
	keys, extents     int
	samples           int64
}

func (m storeMemory) bytesPerSample() float64 {
	return float64(m.extentBytes) / float64(max(m.samples, 1))
}

func readStoreMemory(tb testing.TB, addr string) storeMemory {
	tb.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer c.Close()
	var m storeMemory
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		tb.Fatalf("INFO memory: %v", err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			m.used, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		m.keys++
		if !strings.Contains(key, ":extent:") || strings.HasSuffix(key, ":lease") {
			continue
		}
		raw, err := c.Get(ctx, key).Bytes()
		if err != nil {
			continue // expired since the scan
		}
		e, err := entry.Decode(raw)
		if err != nil {
			tb.Errorf("extent %s does not decode: %v", key, err)
			continue
		}
		size, _ := c.MemoryUsage(ctx, key, 0).Result()
		m.extents++
		m.extentBytes += size
		for _, s := range e.Series {
			m.samples += int64(len(s.T))
		}
	}
	if err := iter.Err(); err != nil {
		tb.Fatalf("SCAN: %v", err)
	}
	return m
}
