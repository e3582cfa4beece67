package awsemu

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// serveCloudWatch answers the CloudWatch alarm operations in RPC v2 CBOR.
func (s *Server) serveCloudWatch(ctx context.Context, c emulator.Call, body []byte, q emulator.Querier) emulator.Response {
	in, aerr := decodeCBOR(body)
	if aerr != nil {
		return cborError(aerr)
	}
	var out cbor.Map
	switch c.Operation {
	case "DescribeAlarms":
		out, aerr = s.describeAlarms(ctx, in, q)
	case "DescribeAlarmContributors":
		out, aerr = s.describeAlarmContributors(ctx, in, q)
	case "DescribeAlarmHistory":
		out, aerr = s.describeAlarmHistory(ctx, in, q)
	default:
		aerr = &apiErr{status: http.StatusNotFound, code: "UnknownOperationException",
			msg: fmt.Sprintf("the emulator does not serve CloudWatch %s; it serves %s", c.Operation, strings.Join(cloudWatchOps, ", "))}
	}
	if aerr != nil {
		return cborError(aerr)
	}
	return cborResponse(http.StatusOK, out, "")
}

func invalidParam(format string, args ...any) *apiErr {
	return &apiErr{status: http.StatusBadRequest, code: "InvalidParameterValueException", query: "InvalidParameterValue", msg: fmt.Sprintf(format, args...)}
}

func invalidToken() *apiErr {
	return &apiErr{status: http.StatusBadRequest, code: "InvalidNextToken", msg: "The NextToken is not valid for this request; start again without it"}
}

// withAlarms brings the alarms up to the TSDB head and calls f with them.
func (s *Server) withAlarms(ctx context.Context, q emulator.Querier, f func([]*alarm) error) *apiErr {
	if err := s.alarm.upTo(ctx, q, s.head(), f); err != nil {
		return &apiErr{status: http.StatusInternalServerError, code: "InternalServiceFault", query: "InternalServiceError", msg: "evaluating the alarms failed: " + err.Error()}
	}
	return nil
}

// metricAlarmsOnly reports whether an AlarmTypes filter admits metric alarms, the only
// kind the emulator has (no filter means metric alarms only, as in CloudWatch).
func metricAlarmsOnly(types []string) bool {
	return len(types) == 0 || slices.Contains(types, "MetricAlarm")
}

func (s *Server) describeAlarms(ctx context.Context, in cborIn, q emulator.Querier) (cbor.Map, *apiErr) {
	names, aerr := in.strs("AlarmNames")
	if aerr != nil {
		return nil, aerr
	}
	prefix, _ := in.str("AlarmNamePrefix")
	stateFilter, _ := in.str("StateValue")
	actionPrefix, _ := in.str("ActionPrefix")
	children, _ := in.str("ChildrenOfAlarmName")
	parents, _ := in.str("ParentsOfAlarmName")
	types, aerr := in.strs("AlarmTypes")
	if aerr != nil {
		return nil, aerr
	}
	tok, _ := in.str("NextToken")
	maxRec, aerr := in.int("MaxRecords")
	if aerr != nil {
		return nil, aerr
	}
	size, bad := pageSize("MaxRecords", maxRec, 50, 100)
	switch {
	case bad != "":
		return nil, invalidParam("%s", bad)
	case len(names) > 0 && prefix != "":
		return nil, &apiErr{status: http.StatusBadRequest, code: "InvalidParameterCombinationException", query: "InvalidParameterCombination",
			msg: "AlarmNames and AlarmNamePrefix cannot be used together; give one of them"}
	case len(names) > 100:
		return nil, invalidParam("AlarmNames has %d names; at most 100 are allowed", len(names))
	case stateFilter != "" && !slices.Contains([]string{stateOK, stateAlarm, stateInsufficient}, stateFilter):
		return nil, invalidParam("StateValue %q is not one of OK, ALARM, INSUFFICIENT_DATA", stateFilter)
	}
	cur, ok := parseToken("DescribeAlarms", tok)
	if !ok {
		return nil, invalidToken()
	}
	var list cbor.List
	aerr = s.withAlarms(ctx, q, func(all []*alarm) error {
		if !metricAlarmsOnly(types) || actionPrefix != "" || children != "" || parents != "" {
			return nil // no composite alarms and no alarm actions in the emulator
		}
		var keep []*alarm
		for _, a := range all {
			if (len(names) == 0 || slices.Contains(names, a.def.Name)) && strings.HasPrefix(a.def.Name, prefix) &&
				(stateFilter == "" || a.state == stateFilter) {
				keep = append(keep, a)
			}
		}
		sort.Slice(keep, func(i, j int) bool { return keep[i].def.Name < keep[j].def.Name })
		var pageItems []*alarm
		pageItems, tok = page("DescribeAlarms", keep, cur, size)
		for _, a := range pageItems {
			list = append(list, s.metricAlarm(a))
		}
		return nil
	})
	if aerr != nil {
		return nil, aerr
	}
	out := cbor.Map{"MetricAlarms": orEmpty(list), "CompositeAlarms": cbor.List{}}
	if tok != "" {
		out["NextToken"] = cbor.String(tok)
	}
	return out, nil
}

func orEmpty(l cbor.List) cbor.List {
	if l == nil {
		return cbor.List{}
	}
	return l
}

// metricAlarm renders a PromQL alarm as DescribeAlarms' MetricAlarm: the query in
// EvaluationCriteria.PromQLCriteria, no metric, dimensions or threshold of its own.
func (s *Server) metricAlarm(a *alarm) cbor.Map {
	crit := cbor.Map{"Query": cbor.String(a.def.Query),
		"PendingPeriod":  cborInt(int64(a.def.PendingPeriod / time.Second)),
		"RecoveryPeriod": cborInt(int64(a.def.RecoveryPeriod / time.Second))}
	m := cbor.Map{
		"AlarmName":                          cbor.String(a.def.Name),
		"AlarmArn":                           cbor.String(a.arn),
		"AlarmConfigurationUpdatedTimestamp": cborTime(s.cfg.Origin),
		"ActionsEnabled":                     cbor.Bool(true),
		"OKActions":                          cbor.List{},
		"AlarmActions":                       cbor.List{},
		"InsufficientDataActions":            cbor.List{},
		"StateValue":                         cbor.String(a.state),
		"StateReason":                        cbor.String(a.reason),
		"StateUpdatedTimestamp":              cborTime(a.updated),
		"StateTransitionedTimestamp":         cborTime(a.updated),
		"EvaluationCriteria":                 cbor.Map{"PromQLCriteria": crit},
		"EvaluationInterval":                 cborInt(int64(a.def.Period / time.Second)),
	}
	if a.def.Description != "" {
		m["AlarmDescription"] = cbor.String(a.def.Description)
	}
	return m
}

func (s *Server) describeAlarmContributors(ctx context.Context, in cborIn, q emulator.Querier) (cbor.Map, *apiErr) {
	name, aerr := in.str("AlarmName")
	if aerr != nil {
		return nil, aerr
	}
	if name == "" {
		return nil, &apiErr{status: http.StatusBadRequest, code: "MissingRequiredParameterException", query: "MissingParameter", msg: "AlarmName is required"}
	}
	tok, _ := in.str("NextToken")
	cur, ok := parseToken("DescribeAlarmContributors", tok)
	if !ok {
		return nil, invalidToken()
	}
	var list cbor.List
	found := false
	aerr = s.withAlarms(ctx, q, func(all []*alarm) error {
		for _, a := range all {
			if a.def.Name != name {
				continue
			}
			found = true
			var cs []*contributor
			for _, c := range a.contributors {
				if c.inAlarm {
					cs = append(cs, c)
				}
			}
			sortContributors(cs)
			cs, tok = page("DescribeAlarmContributors", cs, cur, 100)
			for _, c := range cs {
				list = append(list, cbor.Map{
					"ContributorId":              cbor.String(c.id),
					"ContributorAttributes":      cborStringMap(c.attrs),
					"StateReason":                cbor.String(c.reason),
					"StateTransitionedTimestamp": cborTime(c.since),
				})
			}
		}
		return nil
	})
	if aerr != nil {
		return nil, aerr
	}
	if !found {
		return nil, &apiErr{status: http.StatusNotFound, code: "ResourceNotFoundException",
			msg: fmt.Sprintf("Alarm %q does not exist in this region; list the alarms with DescribeAlarms", name)}
	}
	out := cbor.Map{"AlarmContributors": orEmpty(list)}
	if tok != "" {
		out["NextToken"] = cbor.String(tok)
	}
	return out, nil
}

func (s *Server) describeAlarmHistory(ctx context.Context, in cborIn, q emulator.Querier) (cbor.Map, *apiErr) {
	name, _ := in.str("AlarmName")
	contributorID, _ := in.str("AlarmContributorId")
	itemType, _ := in.str("HistoryItemType")
	scanBy, _ := in.str("ScanBy")
	types, aerr := in.strs("AlarmTypes")
	if aerr != nil {
		return nil, aerr
	}
	from, aerr := in.time("StartDate")
	if aerr != nil {
		return nil, aerr
	}
	to, aerr := in.time("EndDate")
	if aerr != nil {
		return nil, aerr
	}
	maxRec, aerr := in.int("MaxRecords")
	if aerr != nil {
		return nil, aerr
	}
	size, bad := pageSize("MaxRecords", maxRec, 100, 100)
	switch {
	case bad != "":
		return nil, invalidParam("%s", bad)
	case itemType != "" && !slices.Contains([]string{"ConfigurationUpdate", "StateUpdate", "Action", "AlarmContributorStateUpdate", "AlarmContributorAction"}, itemType):
		return nil, invalidParam("HistoryItemType %q is not valid; use StateUpdate, ConfigurationUpdate or Action", itemType)
	case scanBy != "" && scanBy != "TimestampDescending" && scanBy != "TimestampAscending":
		return nil, invalidParam("ScanBy %q is not valid; use TimestampDescending or TimestampAscending", scanBy)
	case !from.IsZero() && !to.IsZero() && to.Before(from):
		return nil, invalidParam("EndDate is before StartDate")
	}
	tok, _ := in.str("NextToken")
	cur, ok := parseToken("DescribeAlarmHistory", tok)
	if !ok {
		return nil, invalidToken()
	}
	var list cbor.List
	aerr = s.withAlarms(ctx, q, func(all []*alarm) error {
		if cur.asOf == 0 {
			cur.asOf = s.head().UnixMilli()
		}
		var items []historyItem
		for _, a := range all {
			if name != "" && a.def.Name != name || !metricAlarmsOnly(types) {
				continue
			}
			for _, h := range a.history {
				switch {
				case !from.IsZero() && h.time.Before(from), !to.IsZero() && h.time.After(to), h.time.UnixMilli() > cur.asOf:
				case contributorID != "" && (h.contributor == nil || h.contributor.id != contributorID):
				case itemType == "StateUpdate" && h.contributor != nil, itemType == "AlarmContributorStateUpdate" && h.contributor == nil:
				case itemType != "" && itemType != "StateUpdate" && itemType != "AlarmContributorStateUpdate":
				default:
					items = append(items, h)
				}
			}
		}
		sort.SliceStable(items, func(i, j int) bool {
			if scanBy == "TimestampAscending" {
				return items[i].time.Before(items[j].time)
			}
			return items[i].time.After(items[j].time)
		})
		items, tok = page("DescribeAlarmHistory", items, cur, size)
		for _, h := range items {
			m := cbor.Map{
				"AlarmName":       cbor.String(h.alarm),
				"AlarmType":       cbor.String("MetricAlarm"),
				"Timestamp":       cborTime(h.time),
				"HistoryItemType": cbor.String("StateUpdate"),
				"HistorySummary":  cbor.String(h.summary),
				"HistoryData":     cbor.String(h.data),
			}
			if c := h.contributor; c != nil {
				m["HistoryItemType"] = cbor.String("AlarmContributorStateUpdate")
				m["AlarmContributorId"] = cbor.String(c.id)
				m["AlarmContributorAttributes"] = cborStringMap(c.attrs)
			}
			list = append(list, m)
		}
		return nil
	})
	if aerr != nil {
		return nil, aerr
	}
	out := cbor.Map{"AlarmHistoryItems": orEmpty(list)}
	if tok != "" {
		out["NextToken"] = cbor.String(tok)
	}
	return out, nil
}
