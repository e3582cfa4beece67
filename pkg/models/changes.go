package models

import (
	"fmt"
	"strings"
)

// ChangesQuery is a changes query: the fleet's CloudTrail changes in the time range, as a
// table or as annotations, filtered like an inventory query and by account.
type ChangesQuery struct {
	HealthQuery
	// Accounts filter the changes by the account CloudTrail recorded them in; nil means any.
	Accounts []string
}

// Changes reads the model as a changes query: the inventory query's fields (endpoint,
// inferenceComponent, format, region) and account. Errors name the field and the fix.
func (m *Model) Changes() (*ChangesQuery, error) {
	h, err := m.Health(QueryTypeChanges)
	if err != nil {
		return nil, err
	}
	q := &ChangesQuery{HealthQuery: *h}
	v, err := stringField(m.raw.Account)
	if err != nil {
		return nil, fmt.Errorf("query %s: field \"account\" %w", refName(h.RefID), err)
	}
	if q.Accounts, err = ParseNames(v); err != nil {
		return nil, fmt.Errorf("query %s: field \"account\": %w", refName(h.RefID), err)
	}
	for _, a := range q.Accounts {
		if len(a) != 12 || strings.Trim(a, "0123456789") != "" {
			return nil, fmt.Errorf("query %s: field \"account\": %q is not an AWS account id: use 12 digits, several joined by \",\"", refName(h.RefID), a)
		}
	}
	return q, nil
}
