// Package pluginhost is the part of Grafana's HTTP API that a data source's frontend calls
// through getBackendSrv(), served over a plugin reached by the plugin protocol: settings
// (GET/PUT /api/datasources/uid/<uid>), Save & test (…/health), resources
// (…/resources/*) and queries (POST /api/ds/query). The browser tests mount the real editors
// against it, with the real plugin binary behind (rig/cmd/pluginhost). Loopback only.
package pluginhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Plugin is the plugin's side of the protocol (pluginproc.Process implements it).
type Plugin interface {
	CheckHealth(ctx context.Context, pc backend.PluginContext) (*backend.CheckHealthResult, error)
	QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error)
	CallResource(ctx context.Context, req *backend.CallResourceRequest) (*backend.CallResourceResponse, error)
}

// maxBodyBytes bounds what the host reads of a request; editors send small JSON bodies.
const maxBodyBytes = 1 << 20

// Host serves the data sources' API and, at every other path, the static handler (the
// test page).
type Host struct {
	plugin  Plugin
	context func(*backend.DataSourceInstanceSettings) backend.PluginContext
	mux     *http.ServeMux
	now     func() time.Time

	mu      sync.Mutex
	sources map[string]*backend.DataSourceInstanceSettings // by uid
}

// New serves sources through p; context turns a data source's settings into the plugin
// context of a call (pluginproc.Context).
func New(p Plugin, context func(*backend.DataSourceInstanceSettings) backend.PluginContext, static http.Handler, sources ...*backend.DataSourceInstanceSettings) *Host {
	h := &Host{plugin: p, context: context, mux: http.NewServeMux(), now: time.Now, sources: map[string]*backend.DataSourceInstanceSettings{}}
	for _, ds := range sources {
		h.sources[ds.UID] = ds
	}
	h.mux.HandleFunc("GET /api/datasources/uid/{uid}", h.getSettings)
	h.mux.HandleFunc("PUT /api/datasources/uid/{uid}", h.putSettings)
	h.mux.HandleFunc("GET /api/datasources/uid/{uid}/health", h.health)
	h.mux.HandleFunc("/api/datasources/uid/{uid}/resources/{path...}", h.resource)
	h.mux.HandleFunc("POST /api/ds/query", h.query)
	h.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, message(r.Method+" "+r.URL.Path+" is not part of the API this host serves"))
	})
	if static != nil {
		h.mux.Handle("/", static)
	}
	return h
}

func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func message(m string) map[string]string { return map[string]string{"message": m} }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// source returns a copy of the data source's settings, or answers 404.
func (h *Host) source(w http.ResponseWriter, uid string) (*backend.DataSourceInstanceSettings, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ds, ok := h.sources[uid]
	if !ok {
		writeJSON(w, http.StatusNotFound, message(fmt.Sprintf("data source %q not found", uid)))
		return nil, false
	}
	c := *ds
	return &c, true
}

// settingsJSON is the data source as Grafana's API shows it: secrets only as
// secureJsonFields flags, never their values.
type settingsJSON struct {
	ID               int64           `json:"id"`
	UID              string          `json:"uid"`
	Name             string          `json:"name"`
	Type             string          `json:"type"`
	Access           string          `json:"access"`
	JSONData         json.RawMessage `json:"jsonData"`
	SecureJSONFields map[string]bool `json:"secureJsonFields"`
}

func (h *Host) getSettings(w http.ResponseWriter, r *http.Request) {
	ds, ok := h.source(w, r.PathValue("uid"))
	if !ok {
		return
	}
	fields := map[string]bool{}
	for k := range ds.DecryptedSecureJSONData {
		fields[k] = true
	}
	jd := ds.JSONData
	if len(jd) == 0 {
		jd = json.RawMessage("{}")
	}
	writeJSON(w, http.StatusOK, settingsJSON{ID: ds.ID, UID: ds.UID, Name: ds.Name, Type: ds.Type, Access: "proxy", JSONData: jd, SecureJSONFields: fields})
}

// putSettings saves what the config editor sends: jsonData replaces the stored one; each
// secureJsonData key given replaces its secret, and an empty value (a reset left empty)
// removes it; secrets not sent are kept, as Grafana does.
func (h *Host) putSettings(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name           string            `json:"name"`
		JSONData       json.RawMessage   `json:"jsonData"`
		SecureJSONData map[string]string `json:"secureJsonData"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, message("settings body: "+err.Error()))
		return
	}
	if len(body.JSONData) > 0 && body.JSONData[0] != '{' {
		writeJSON(w, http.StatusBadRequest, message("jsonData must be a JSON object"))
		return
	}
	uid := r.PathValue("uid")
	h.mu.Lock()
	defer h.mu.Unlock()
	old, ok := h.sources[uid]
	if !ok {
		writeJSON(w, http.StatusNotFound, message(fmt.Sprintf("data source %q not found", uid)))
		return
	}
	ds := *old
	if body.Name != "" {
		ds.Name = body.Name
	}
	if len(body.JSONData) > 0 {
		ds.JSONData = body.JSONData
	}
	ds.DecryptedSecureJSONData = maps.Clone(old.DecryptedSecureJSONData)
	if ds.DecryptedSecureJSONData == nil {
		ds.DecryptedSecureJSONData = map[string]string{}
	}
	for k, v := range body.SecureJSONData {
		if v == "" {
			delete(ds.DecryptedSecureJSONData, k)
		} else {
			ds.DecryptedSecureJSONData[k] = v
		}
	}
	// A new Updated makes the plugin build a new instance with the new settings.
	ds.Updated = h.now()
	h.sources[uid] = &ds
	writeJSON(w, http.StatusOK, message("Datasource updated"))
}

// health answers as Grafana does: 200 with status OK, else 400 with the plugin's message.
func (h *Host) health(w http.ResponseWriter, r *http.Request) {
	ds, ok := h.source(w, r.PathValue("uid"))
	if !ok {
		return
	}
	res, err := h.plugin.CheckHealth(r.Context(), h.context(ds))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, message("plugin health check failed: "+err.Error()))
		return
	}
	out := map[string]any{"status": res.Status.String(), "message": res.Message}
	if len(res.JSONDetails) > 0 && json.Valid(res.JSONDetails) {
		out["details"] = json.RawMessage(res.JSONDetails)
	}
	status := http.StatusOK
	if res.Status != backend.HealthStatusOk {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, out)
}

func (h *Host) resource(w http.ResponseWriter, r *http.Request) {
	ds, ok := h.source(w, r.PathValue("uid"))
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, message("resource body: "+err.Error()))
		return
	}
	headers := r.Header.Clone()
	headers.Del("Cookie")
	resp, err := h.plugin.CallResource(r.Context(), &backend.CallResourceRequest{
		PluginContext: h.context(ds),
		Path:          r.PathValue("path"),
		Method:        r.Method,
		URL:           r.URL.RequestURI(),
		Headers:       headers,
		Body:          body,
	})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, message("plugin resource call failed: "+err.Error()))
		return
	}
	for k, vs := range resp.Headers {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(resp.Body)
}

// queryRequest is the body DataSourceWithBackend.query posts: from and to in epoch
// milliseconds, each query with its data source and Grafana's interval and point budget.
type queryRequest struct {
	From    string            `json:"from"`
	To      string            `json:"to"`
	Queries []json.RawMessage `json:"queries"`
}

type queryHead struct {
	RefID         string `json:"refId"`
	QueryType     string `json:"queryType"`
	IntervalMs    int64  `json:"intervalMs"`
	MaxDataPoints int64  `json:"maxDataPoints"`
	Datasource    struct {
		UID string `json:"uid"`
	} `json:"datasource"`
}

// Grafana's defaults for a query that sends no interval or point budget.
const (
	defaultIntervalMs    = 1000
	defaultMaxDataPoints = 100
)

func epochMs(field, v string) (time.Time, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want epoch milliseconds", field, v)
	}
	return time.UnixMilli(ms), nil
}

// parseQueries turns the posted body into one plugin request per data source uid.
func parseQueries(raw []byte) (map[string][]backend.DataQuery, error) {
	var req queryRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("query body: %w", err)
	}
	from, err := epochMs("from", req.From)
	if err != nil {
		return nil, err
	}
	to, err := epochMs("to", req.To)
	if err != nil {
		return nil, err
	}
	if len(req.Queries) == 0 {
		return nil, errors.New("no queries")
	}
	byUID := map[string][]backend.DataQuery{}
	for i, q := range req.Queries {
		var head queryHead
		if err := json.Unmarshal(q, &head); err != nil {
			return nil, fmt.Errorf("query %d: %w", i, err)
		}
		if head.Datasource.UID == "" {
			return nil, fmt.Errorf("query %q names no data source uid", head.RefID)
		}
		if head.IntervalMs <= 0 {
			head.IntervalMs = defaultIntervalMs
		}
		if head.MaxDataPoints <= 0 {
			head.MaxDataPoints = defaultMaxDataPoints
		}
		byUID[head.Datasource.UID] = append(byUID[head.Datasource.UID], backend.DataQuery{
			RefID:         head.RefID,
			QueryType:     head.QueryType,
			Interval:      time.Duration(head.IntervalMs) * time.Millisecond,
			MaxDataPoints: head.MaxDataPoints,
			TimeRange:     backend.TimeRange{From: from, To: to},
			JSON:          q,
		})
	}
	return byUID, nil
}

// query runs the queries of each data source through the plugin and answers with all
// responses by refId: 200, or 400 when any query failed (Grafana's default).
func (h *Host) query(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, message("query body: "+err.Error()))
		return
	}
	byUID, err := parseQueries(raw)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, message(err.Error()))
		return
	}
	all := backend.NewQueryDataResponse()
	for _, uid := range slices.Sorted(maps.Keys(byUID)) {
		ds, ok := h.source(w, uid)
		if !ok {
			return
		}
		resp, err := h.plugin.QueryData(r.Context(), &backend.QueryDataRequest{PluginContext: h.context(ds), Queries: byUID[uid]})
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, message("plugin query failed: "+err.Error()))
			return
		}
		maps.Copy(all.Responses, resp.Responses)
	}
	out, err := all.MarshalJSON()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, message("encoding the frames: "+err.Error()))
		return
	}
	status := http.StatusOK
	for _, dr := range all.Responses {
		if dr.Error != nil {
			status = http.StatusBadRequest
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}
