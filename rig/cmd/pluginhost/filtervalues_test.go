package main

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

func TestFilterValuesAreHardToQuoteAndReproducible(t *testing.T) {
	a, b := filterValues(7, 40), filterValues(7, 40)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different values")
	}
	if slices.Equal(a, filterValues(8, 40)) {
		t.Error("another seed gave the same values")
	}
	seen := map[string]bool{}
	for _, v := range a {
		if seen[v] {
			t.Errorf("%q twice", v)
		}
		seen[v] = true
		for _, r := range hard {
			if !strings.ContainsRune(v, r) {
				t.Errorf("%q lacks %q", v, r)
			}
		}
	}
}

func TestFilterSeriesAreAppendedPerStep(t *testing.T) {
	opts := tsdb.DefaultOptions()
	opts.WALSegmentSize = -1
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	values := filterValues(1, 3)
	end := time.Unix(1_764_633_600, 0)
	if err := appendFilterSeries(context.Background(), db, filterSeries(values, fleet.Default(), "us-east-1"), end.Add(-10*time.Minute), end, time.Minute); err != nil {
		t.Fatal(err)
	}
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, filterMetric))
	var got []string
	for ss.Next() {
		s := ss.At()
		n := 0
		it := s.Iterator(nil)
		for it.Next() != 0 {
			n++
		}
		if n != 11 {
			t.Errorf("%v: %d samples, want 11 (one a minute over 10 minutes)", s.Labels(), n)
		}
		got = append(got, s.Labels().Get(filterLabel))
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(values))
	if !slices.Equal(got, want) {
		t.Errorf("values %q, want %q", got, want)
	}
	// The default fleet's SGLang model is chat-ic's chat-qwen-7b.
	if ep, ic := sglangHome(fleet.Default()); ep != "chat-ic" || ic != "chat-qwen-7b" {
		t.Errorf("SGLang home %s/%s, want chat-ic/chat-qwen-7b", ep, ic)
	}
}
