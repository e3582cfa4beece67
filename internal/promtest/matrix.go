// Package promtest builds Prometheus API answers for tests of the plugin and the rig.
package promtest

import (
	"fmt"
	"net/http"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// LargeMatrix is a query_range success answer of series × points float samples, 15 s
// apart, about 26 bytes a point: the shape of a heavy panel's answer.
func LargeMatrix(series, points int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for s := range series {
		if s > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"__name__":"m","instance":"i-%04d"},"values":[`, s)
		for p := range points {
			if p > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%d,"%d.%03d"]`, 1_700_000_000+p*15, s*p%9973, p%1000)
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// CloudWatchMatrix is a query_range matrix answer of series × points on a one-minute
// grid from t0, with CloudWatch-like labels and values at full float64 precision (about
// 33 bytes a point); the series are in label order, as Prometheus and the results cache
// give them.
func CloudWatchMatrix(t0 time.Time, series, points int) []byte {
	b := []byte(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for s := range series {
		if s > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"metric":{"@aws.region":"us-east-1","@resource.host.id":"i-%08x","@resource.host.type":"ml.g6e.12xlarge","__name__":"vllm:num_requests_running","aws.sagemaker.endpoint.name":"ep-%d"},"values":[`, s, s%40)
		for p := range points {
			if p > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `[%d,"%d.%015d"]`, t0.Unix()+int64(p)*60, (s*p)%100, (s*7919+p*104729)%1000000007)
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}}"...)
}

// WritePaced writes body with its Content-Length in 64 KiB writes, flushed, with a 0.5 ms
// pause between them, as a network delivers a large answer.
func WritePaced(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	const chunk = 64 << 10
	for off := 0; off < len(body); off += chunk {
		_, _ = w.Write(body[off:min(off+chunk, len(body))])
		w.(http.Flusher).Flush()
		if off+chunk < len(body) {
			time.Sleep(500 * time.Microsecond)
		}
	}
}

const heapObjects = "/memory/classes/heap/objects:bytes"

// HeapObjects is the live-object heap now (garbage not yet collected included).
func HeapObjects() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// HeapPeak reads HeapObjects every 200 µs until stop is closed, then sends the highest
// value seen.
func HeapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		var peak uint64
		for {
			peak = max(peak, HeapObjects())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}
