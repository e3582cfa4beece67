package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Model is a query's JSON model decoded once: every key any query type reads, kept raw for
// its type's parser (PromQL, Health, Cost, Diagnosis), which reads it leniently and names
// the field in its errors. The plugin routes on Type and parses the same Model, so a panel
// query's JSON is read once.
type Model struct {
	dq  backend.DataQuery
	raw rawModel
	err error // the JSON is not an object; the type's parser says so, Type ignores it
}

// Decode reads dq's JSON; a broken one is reported by the query type's parser.
func Decode(dq backend.DataQuery) *Model {
	m := &Model{dq: dq}
	if js := bytes.TrimSpace(dq.JSON); len(js) > 0 && string(js) != "null" {
		m.err = json.Unmarshal(js, &m.raw)
	}
	return m
}

// Query is the query as Grafana sent it.
func (m *Model) Query() backend.DataQuery { return m.dq }

func (m *Model) notObject() error {
	return fmt.Errorf("query %s: the query model is not a JSON object (%s): re-save the panel or fix the dashboard JSON", refName(m.dq.RefID), jsonTypeProblem(m.err))
}

// Type is the type the query runs as: the request's queryType, else the model's; "" is
// PromQL. An unknown type is refused, naming the known ones, rather than run as PromQL.
func (m *Model) Type() (string, error) {
	qt := m.dq.QueryType
	if qt == "" {
		qt = m.raw.QueryType
	}
	switch {
	case qt == "":
		return QueryTypePromQL, nil
	case slices.Contains(QueryTypes, qt):
		return qt, nil
	}
	return "", fmt.Errorf("query %s: queryType %q is unknown: use %s (or leave it empty for PromQL)",
		refName(m.dq.RefID), truncateForMessage(qt), strings.Join(QueryTypes, ", "))
}

// Diagnosis reads the scope of a diagnosis query as written (pkg/diagnosis reads what a
// dashboard variable made of it): each key a JSON string, absent being "".
func (m *Model) Diagnosis() (endpoint, component string, err error) {
	if m.err != nil {
		return "", "", m.err
	}
	for _, f := range []struct {
		raw  json.RawMessage
		into *string
	}{{m.raw.Endpoint, &endpoint}, {m.raw.InferenceComponent, &component}} {
		if len(f.raw) > 0 && !isNull(f.raw) {
			if err := json.Unmarshal(f.raw, f.into); err != nil {
				return "", "", err
			}
		}
	}
	return endpoint, component, nil
}
