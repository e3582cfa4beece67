package dashload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/dashboards/builder"
)

// Panel is one panel as the browser asks for it: all its targets in one request.
type Panel struct {
	Key, Kind string
	Queries   []backend.DataQuery
}

// Lookup is one template variable's label-values call.
type Lookup struct{ Label, Match string }

// Dashboard is what a browser sends to open one generated dashboard.
type Dashboard struct {
	Name    string
	Panels  []Panel
	Lookups []Lookup
}

// Dashboards reads the generated dashboards into what a browser sends on load, by name.
// The AWS API query types are left out: the load is the PromQL API's.
func Dashboards(tb testing.TB) []Dashboard {
	var out []Dashboard
	for file, d := range Generated(tb) {
		vars := DefaultVars(d)
		dl := Dashboard{Name: strings.TrimSuffix(file, ".json")}
		for _, v := range d.Templates.List {
			q, _ := builder.VariableQuery(v.Query)
			if m := LabelValuesForm.FindStringSubmatch(q); v.Type == "query" && m != nil {
				dl.Lookups = append(dl.Lookups, Lookup{Label: m[2], Match: Interpolate(m[1], vars)})
			}
		}
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				continue
			}
			pl := Panel{Key: fmt.Sprintf("%s/%d", dl.Name, p.ID), Kind: p.Type}
			for _, tg := range p.Targets {
				if AWSTarget(tg) {
					continue
				}
				raw, _ := json.Marshal(InterpolateTarget(tg, vars))
				qt, _ := tg["queryType"].(string)
				pl.Queries = append(pl.Queries, backend.DataQuery{RefID: tg["refId"].(string), QueryType: qt, JSON: raw,
					MaxDataPoints: 1000, Interval: 20 * time.Second})
			}
			if len(pl.Queries) > 0 {
				dl.Panels = append(dl.Panels, pl)
			}
		}
		out = append(out, dl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RaiseInterval raises every query's interval to min, as Grafana's frontend raises it to
// the data source's timeInterval: the panels without a min step of their own run at it.
func RaiseInterval(dashes []Dashboard, min time.Duration) {
	for _, d := range dashes {
		for _, p := range d.Panels {
			for k := range p.Queries {
				p.Queries[k].Interval = max(p.Queries[k].Interval, min)
			}
		}
	}
}

// Client is a data source as Grafana calls it: plugin.Datasource in process, or
// pluginproc.Process.For a plugin process.
type Client interface {
	backend.QueryDataHandler
	backend.CallResourceHandler
}

// Result is what one dashboard load cost and how long its panels took.
type Result struct {
	Calls                 []Call
	Bytes                 int64
	Throttled, Timeout422 int
	Samples               float64
	PanelTime             map[string]time.Duration
	Errors                []string
	Failed                []string      // the keys of panels with an error in any of their queries
	Notices               []string      // every frame notice's text, once per frame
	KeptFailures          int           // panels given a kept over-limit failure without a call
	Started, PanelsAt     time.Time     // the load's start; when its panels were sent
	Took, Offset          time.Duration // the whole load; its start after the cold load's
}

// Load opens a dashboard as a browser does: the variables' lookups, then every panel at
// once, each panel its own request; the time range is the last 6 h up to at. The calls
// are those m saw during the load.
func Load(c Client, m *Meter, dl Dashboard, at time.Time) Result {
	before := m.Count()
	res := Result{PanelTime: map[string]time.Duration{}, Started: time.Now()}
	var mu sync.Mutex
	from, to := at.Add(-6*time.Hour), at
	for _, l := range dl.Lookups {
		q := url.Values{"match[]": {l.Match}, "start": {fmt.Sprint(from.Unix())}, "end": {fmt.Sprint(to.Unix())}}
		path := "api/v1/label/" + l.Label + "/values"
		err := c.CallResource(context.Background(), &backend.CallResourceRequest{Path: path, Method: http.MethodGet, URL: "/" + path + "?" + q.Encode()},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
				if r.Status != http.StatusOK {
					mu.Lock()
					res.Errors = append(res.Errors, fmt.Sprintf("lookup %s: %d %s", l.Label, r.Status, r.Body))
					mu.Unlock()
				}
				return nil
			}))
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("lookup %s: %v", l.Label, err))
		}
	}
	start := time.Now()
	res.PanelsAt = start
	var wg sync.WaitGroup
	for _, p := range dl.Panels {
		wg.Go(func() {
			qs := slices.Clone(p.Queries)
			for i := range qs {
				qs[i].TimeRange = backend.TimeRange{From: from, To: to}
			}
			resp, err := c.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			res.PanelTime[p.Key] = took
			if err != nil {
				res.Errors = append(res.Errors, p.Key+": "+err.Error())
				res.Failed = append(res.Failed, p.Key)
				return
			}
			failed := false
			for ref, dr := range resp.Responses {
				if dr.Error != nil {
					failed = true
					res.Errors = append(res.Errors, fmt.Sprintf("%s/%s: %v", p.Key, ref, dr.Error))
					if strings.Contains(dr.Error.Error(), "kept like a cached answer") {
						res.KeptFailures++
					}
				}
				for _, f := range dr.Frames {
					if f.Meta == nil {
						continue
					}
					for _, n := range f.Meta.Notices {
						res.Notices = append(res.Notices, n.Text)
					}
					for _, s := range f.Meta.Stats {
						if s.DisplayName == "Samples scanned (estimate)" {
							res.Samples += s.Value
						}
					}
				}
			}
			if failed {
				res.Failed = append(res.Failed, p.Key)
			}
		})
	}
	wg.Wait()
	res.Took = time.Since(res.Started)
	res.Calls = m.Since(before)
	for _, c := range res.Calls {
		res.Bytes += c.Bytes
		if c.Throttled {
			res.Throttled++
		}
		if c.Timeout422 {
			res.Timeout422++
		}
	}
	return res
}
