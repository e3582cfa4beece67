package replicas_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
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
// USAGE of their heads and chunks) against the samples in them, read back as a replica
// reads them (Store.GetExtent).
type storeMemory struct {
	used, extentBytes   int64
	keys, extents, lost int // lost: extents that did not read back (expired, evicted)
	samples             int64
}

func (m storeMemory) bytesPerSample() float64 {
	return float64(m.extentBytes) / float64(max(m.samples, 1))
}

// extentKey is an extent's own key (its head when chunked): the namespace's
// "…:extent:{hash}", without a chunk's ":g<generation>:<n>" or a lease's ":lease".
var extentKey = regexp.MustCompile(`:extent:\{[0-9a-f]+\}$`)

func readStoreMemory(tb testing.TB, addr string) storeMemory {
	tb.Helper()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer c.Close()
	// Reading back may take longer than a panel's 50 ms deadline: this is not a panel.
	st, err := sharedstore.Open(sharedstore.Settings{Addresses: []string{addr}, KeyPrefix: sharedstore.DefaultKeyPrefix, Timeout: 2 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
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
		size, _ := c.MemoryUsage(ctx, key, 0).Result()
		m.extentBytes += size
		if !extentKey.MatchString(key) {
			continue // a chunk: its head's extent counts its samples
		}
		e, ok, err := st.GetExtent(ctx, key)
		if !ok || err != nil {
			m.lost++
			continue
		}
		m.extents++
		for _, s := range e.Series {
			m.samples += int64(len(s.T))
		}
	}
	if err := iter.Err(); err != nil {
		tb.Fatalf("SCAN: %v", err)
	}
	return m
}
