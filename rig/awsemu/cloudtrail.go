package awsemu

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

// CloudTrail's event history in awsJson1_1: POST / with X-Amz-Target
// CloudTrail_20131101.LookupEvents (aws-sdk-go-v2; older SDKs send the service's full
// name, com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101.LookupEvents), signed for
// "cloudtrail". LookupEvents answers from the simulator's changes (Config.Changes), newest
// first as CloudTrail does, and throttles beyond CloudTrail's 2 calls a second.
const (
	cloudTrailTgt    = "CloudTrail_20131101."
	cloudTrailFull   = "com.amazonaws.cloudtrail.v20131101."
	svcCloudTrail    = "cloudtrail"
	lookupPageLimit  = 50
	lookupPerSecond  = 2
	lookupBurst      = 2
	cloudTrailMaxAge = 90 * 24 * time.Hour // the event history's reach
)

var cloudTrailOps = []string{"LookupEvents"}

// lookupAttrs are the attributes the emulator filters on; CloudTrail has more (Username,
// ReadOnly, ...), which it refuses naming these.
var lookupAttrs = []string{"EventName", "EventSource", "ResourceName"}

type lookupInput struct {
	LookupAttributes []struct{ AttributeKey, AttributeValue string }
	StartTime        *float64
	EndTime          *float64
	MaxResults       *int64
	NextToken        string
}

func (s *Server) serveCloudTrail(c emulator.Call, body []byte) emulator.Response {
	if c.Operation != "LookupEvents" {
		return jsonError(&apiErr{status: http.StatusBadRequest, code: "UnknownOperationException",
			msg: fmt.Sprintf("the emulator does not serve CloudTrail %s; it serves %s", c.Operation, strings.Join(cloudTrailOps, ", "))})
	}
	if !s.lookups.Allow() {
		return jsonError(&apiErr{status: http.StatusBadRequest, code: "ThrottlingException", msg: "Rate exceeded: LookupEvents allows 2 calls per second per account and region"})
	}
	var in lookupInput
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return jsonError(&apiErr{status: http.StatusBadRequest, code: "SerializationException", msg: "the request body is not LookupEvents' JSON input: " + err.Error()})
		}
	}
	out, aerr := s.lookupEvents(in)
	if aerr != nil {
		return jsonError(aerr)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return jsonError(&apiErr{status: http.StatusInternalServerError, code: "InternalFailure", msg: "encoding the answer failed: " + err.Error()})
	}
	return jsonResponse(http.StatusOK, b, "")
}

func (s *Server) lookupEvents(in lookupInput) (any, *apiErr) {
	invalid := func(code, format string, args ...any) *apiErr {
		return &apiErr{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
	}
	size, bad := pageSize("MaxResults", in.MaxResults, lookupPageLimit, lookupPageLimit)
	if bad != "" {
		return nil, invalid("InvalidMaxResultsException", "%s", bad)
	}
	if len(in.LookupAttributes) > 1 {
		return nil, invalid("InvalidLookupAttributesException", "LookupEvents takes one lookup attribute, got %d", len(in.LookupAttributes))
	}
	var key, value string
	if len(in.LookupAttributes) == 1 {
		key, value = in.LookupAttributes[0].AttributeKey, in.LookupAttributes[0].AttributeValue
		if !slices.Contains(lookupAttrs, key) || value == "" {
			return nil, invalid("InvalidLookupAttributesException", "lookup attribute %q with value %q: the emulator filters on %s, each with a value",
				key, value, strings.Join(lookupAttrs, ", "))
		}
	}
	end := s.head()
	if in.EndTime != nil {
		end = time.UnixMilli(int64(*in.EndTime * 1000))
	}
	start := end.Add(-cloudTrailMaxAge)
	if in.StartTime != nil {
		start = time.UnixMilli(int64(*in.StartTime * 1000))
	}
	if start.After(end) {
		return nil, invalid("InvalidTimeRangeException", "StartTime %s is after EndTime %s", start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	}
	// The token fixes the history's horizon of the first page, so pages stay consistent
	// while the simulator adds changes.
	cur, ok := parseToken("LookupEvents", in.NextToken)
	if !ok {
		return nil, invalid("InvalidNextTokenException", "NextToken must come from a previous LookupEvents answer with the same parameters")
	}
	if cur.asOf == 0 {
		cur.asOf = s.head().UnixMilli()
	}
	var keep []simulator.Change
	for _, c := range s.changes() {
		if c.Time.Before(start) || c.Time.After(end) || c.Time.UnixMilli() > cur.asOf {
			continue
		}
		switch key {
		case "EventName":
			if c.Event != value {
				continue
			}
		case "EventSource":
			if c.Source != value {
				continue
			}
		case "ResourceName":
			if !slices.Contains(resourceNames(c), value) {
				continue
			}
		}
		keep = append(keep, c)
	}
	slices.Reverse(keep) // newest first
	pg, tok := page("LookupEvents", keep, cur, size)
	events := make([]map[string]any, len(pg))
	for i, c := range pg {
		events[i] = lookupEvent(c)
	}
	out := map[string]any{"Events": events}
	if tok != "" {
		out["NextToken"] = tok
	}
	return out, nil
}

func (s *Server) changes() []simulator.Change {
	if s.cfg.Changes == nil {
		return nil
	}
	return s.cfg.Changes()
}

// resourceNames are the names CloudTrail indexes an event's resources by.
func resourceNames(c simulator.Change) []string {
	var out []string
	for _, k := range []string{"inferenceComponentName", "endpointName", "endpointConfigName"} {
		if v, ok := c.Request[k].(string); ok {
			out = append(out, v)
		}
	}
	return out
}

// lookupEvent is one Events entry: the summary fields and the record itself as a JSON
// string, with the caller's temporary credentials in userIdentity as CloudTrail writes
// them (the plugin must show the ARN only).
func lookupEvent(c simulator.Change) map[string]any {
	session := c.Who[strings.LastIndex(c.Who, "/")+1:]
	accessKey := fmt.Sprintf("ASIA%016X", stableHash(c.ID))[:20]
	record := map[string]any{
		"eventVersion": "1.09",
		"userIdentity": map[string]any{
			"type": "AssumedRole", "principalId": "AROAEMULATORDEPLOYER:" + session, "arn": c.Who, "accountId": c.Account,
			"accessKeyId": accessKey, "sessionToken": "IQoJb3JpZ2luX2VjEmulatedSessionToken" + c.ID,
			"sessionContext": map[string]any{"attributes": map[string]any{"creationDate": c.Time.Add(-time.Minute).Format(time.RFC3339), "mfaAuthenticated": "false"}},
		},
		"eventTime": c.Time.Format(time.RFC3339), "eventSource": c.Source, "eventName": c.Event, "awsRegion": c.Region,
		"sourceIPAddress": "203.0.113.10", "userAgent": "aws-cli/2.22.0", "requestParameters": c.Request,
		"responseElements": nil, "requestID": c.ID, "eventID": c.ID, "readOnly": false, "eventType": "AwsApiCall",
		"managementEvent": true, "recipientAccountId": c.Account, "eventCategory": "Management",
	}
	raw, _ := json.Marshal(record) // maps of strings, numbers and nested maps always encode
	var resources []map[string]any
	for _, n := range resourceNames(c) {
		resources = append(resources, map[string]any{"ResourceName": n})
	}
	return map[string]any{
		"EventId": c.ID, "EventName": c.Event, "ReadOnly": "false", "AccessKeyId": accessKey, "EventTime": epoch(c.Time),
		"EventSource": c.Source, "Username": session, "Resources": resources, "CloudTrailEvent": string(raw),
	}
}
