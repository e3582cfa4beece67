package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// BenchmarkRegionFanOut is a query without region (today's path) against the same query
// naming 1 and 4 regions, over in-memory fakes: what the fan-out, the labels and the merge
// cost per query beyond the upstream calls themselves.
func BenchmarkRegionFanOut(b *testing.B) {
	for _, tc := range []struct{ name, region string }{
		{"default", ""},
		{"regions=1", "us-west-2"},
		{"regions=4", "us-west-2,eu-west-1,ap-south-1,us-east-1"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := &regionFakes{mk: regionMatrix}
			d, err := New(context.Background(), testSettings(""), r.factory)
			if err != nil || d.setupErr != nil {
				b.Fatal(err, d.setupErr)
			}
			js, _ := json.Marshal(map[string]string{"expr": "up", "region": tc.region})
			req := &backend.QueryDataRequest{Queries: []backend.DataQuery{dataQuery("A", string(js))}}
			b.ReportAllocs()
			for b.Loop() {
				resp, _ := d.QueryData(context.Background(), req)
				if dr := resp.Responses["A"]; dr.Error != nil || len(dr.Frames) < 2*max(1, strings.Count(tc.region, ",")+1) {
					b.Fatalf("%v, %d frames", dr.Error, len(dr.Frames))
				}
			}
		})
	}
}
