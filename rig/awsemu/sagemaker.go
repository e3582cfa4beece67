package awsemu

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// smListInput is the request of ListEndpoints and ListInferenceComponents.
type smListInput struct {
	NameContains           string
	StatusEquals           string
	EndpointNameEquals     string
	VariantNameEquals      string
	SortBy                 string
	SortOrder              string
	NextToken              string
	MaxResults             *int64
	CreationTimeAfter      *float64
	CreationTimeBefore     *float64
	LastModifiedTimeAfter  *float64
	LastModifiedTimeBefore *float64
}

// smNames is the request of the Describe calls.
type smNames struct {
	EndpointName, EndpointConfigName, InferenceComponentName string
}

// serveSageMaker answers the SageMaker inventory operations in awsJson1_1.
func (s *Server) serveSageMaker(c emulator.Call, body []byte) emulator.Response {
	out, aerr := s.sageMaker(c.Operation, body)
	return respondJSON(out, aerr, "InternalFailure")
}

// respondJSON renders an awsJson1_1 answer: the operation's error, else out; internal is the
// service's error code for a failure of its own (an answer that does not encode).
func respondJSON(out any, aerr *apiErr, internal string) emulator.Response {
	if aerr != nil {
		return jsonError(aerr)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return jsonError(&apiErr{status: http.StatusInternalServerError, code: internal, msg: "encoding the answer failed: " + err.Error()})
	}
	return jsonResponse(http.StatusOK, b, "")
}

func validation(format string, args ...any) *apiErr {
	return &apiErr{status: http.StatusBadRequest, code: "ValidationException", msg: fmt.Sprintf(format, args...)}
}

func (s *Server) sageMaker(op string, body []byte) (any, *apiErr) {
	decode := func(v any) *apiErr {
		if len(body) == 0 {
			return nil
		}
		if err := json.Unmarshal(body, v); err != nil {
			return &apiErr{status: http.StatusBadRequest, code: "SerializationException", msg: "the request body is not the operation's JSON input: " + err.Error()}
		}
		return nil
	}
	eps := s.endpoints()
	switch op {
	case "ListEndpoints", "ListInferenceComponents":
		var in smListInput
		if aerr := decode(&in); aerr != nil {
			return nil, aerr
		}
		return listSageMaker(op, in, eps)
	case "DescribeEndpoint", "DescribeEndpointConfig", "DescribeInferenceComponent":
		var in smNames
		if aerr := decode(&in); aerr != nil {
			return nil, aerr
		}
		return describeSageMaker(op, in, eps)
	case "ListTags":
		var in smListTagsInput
		if aerr := decode(&in); aerr != nil {
			return nil, aerr
		}
		return listTags(in, eps)
	}
	return nil, &apiErr{status: http.StatusBadRequest, code: "UnknownOperationException",
		msg: fmt.Sprintf("the emulator does not serve SageMaker %s; it serves %s", op, strings.Join(sageMakerOps, ", "))}
}

// smListTagsInput is the request of ListTags.
type smListTagsInput struct {
	ResourceArn string
	NextToken   string
	MaxResults  *int64
}

type smTag struct{ Key, Value string }

// listTags answers ListTags for an endpoint or inference component ARN, keys in order.
func listTags(in smListTagsInput, eps []*endpoint) (any, *apiErr) {
	size, bad := pageSize("MaxResults", in.MaxResults, 50, 50)
	if bad != "" {
		return nil, validation("%s", bad)
	}
	cur, ok := parseToken("ListTags", in.NextToken)
	if !ok {
		return nil, validation("Invalid pagination token: NextToken must come from a previous ListTags answer")
	}
	if in.ResourceArn == "" {
		return nil, validation("ResourceArn is required: pass the ARN of an endpoint or inference component")
	}
	var tags map[string]string
	found := false
	for _, e := range eps {
		if e.arn == in.ResourceArn {
			tags, found = e.tags, true
		}
		for _, c := range e.components {
			if c.arn == in.ResourceArn {
				tags, found = c.tags, true
			}
		}
	}
	if !found {
		return nil, validation("Could not find resource %q; ListTags takes the ARN of an existing endpoint or inference component", in.ResourceArn)
	}
	all := make([]smTag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		all = append(all, smTag{k, tags[k]})
	}
	items, next := page("ListTags", all, cur, size)
	out := map[string]any{"Tags": items}
	if items == nil {
		out["Tags"] = []smTag{}
	}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

// listItem is what the list operations filter and sort on.
type listItem struct {
	name, status, endpoint, variant string
	created, modified               time.Time
	summary                         map[string]any
}

func listSageMaker(op string, in smListInput, eps []*endpoint) (any, *apiErr) {
	size, bad := pageSize("MaxResults", in.MaxResults, 10, 100)
	if bad != "" {
		return nil, validation("%s", bad)
	}
	cur, ok := parseToken(op, in.NextToken)
	if !ok {
		return nil, validation("Invalid pagination token: NextToken must come from a previous %s answer", op)
	}
	var items []listItem
	for _, e := range eps {
		if op == "ListEndpoints" {
			items = append(items, listItem{name: e.name, status: e.status, endpoint: e.name, variant: e.variant.name, created: e.created, modified: e.modified,
				summary: map[string]any{"EndpointName": e.name, "EndpointArn": e.arn, "EndpointStatus": e.status,
					"CreationTime": epoch(e.created), "LastModifiedTime": epoch(e.modified)}})
			continue
		}
		for _, c := range e.components {
			items = append(items, listItem{name: c.name, status: c.status, endpoint: c.endpoint, variant: c.variant, created: c.created, modified: c.modified,
				summary: map[string]any{"InferenceComponentName": c.name, "InferenceComponentArn": c.arn, "InferenceComponentStatus": c.status,
					"EndpointName": c.endpoint, "EndpointArn": c.endpointARN, "VariantName": c.variant,
					"CreationTime": epoch(c.created), "LastModifiedTime": epoch(c.modified)}})
		}
	}
	after := func(t time.Time, bound *float64, before bool) bool {
		if bound == nil {
			return true
		}
		b := time.UnixMilli(int64(*bound * 1000))
		if before {
			return t.Before(b)
		}
		return t.After(b)
	}
	var keep []listItem
	for _, it := range items {
		if strings.Contains(strings.ToLower(it.name), strings.ToLower(in.NameContains)) &&
			(in.StatusEquals == "" || it.status == in.StatusEquals) &&
			(in.EndpointNameEquals == "" || it.endpoint == in.EndpointNameEquals) &&
			(in.VariantNameEquals == "" || it.variant == in.VariantNameEquals) &&
			after(it.created, in.CreationTimeAfter, false) && after(it.created, in.CreationTimeBefore, true) &&
			after(it.modified, in.LastModifiedTimeAfter, false) && after(it.modified, in.LastModifiedTimeBefore, true) {
			keep = append(keep, it)
		}
	}
	var less func(a, b listItem) bool
	switch in.SortBy {
	case "", "CreationTime":
		less = func(a, b listItem) bool {
			return a.created.Before(b.created) || a.created.Equal(b.created) && a.name < b.name
		}
	case "Name":
		less = func(a, b listItem) bool { return a.name < b.name }
	case "Status":
		less = func(a, b listItem) bool { return a.status < b.status || a.status == b.status && a.name < b.name }
	default:
		return nil, validation("SortBy %q is not valid; use Name, CreationTime or Status", in.SortBy)
	}
	switch in.SortOrder {
	case "", "Descending":
		sort.SliceStable(keep, func(i, j int) bool { return less(keep[j], keep[i]) })
	case "Ascending":
		sort.SliceStable(keep, func(i, j int) bool { return less(keep[i], keep[j]) })
	default:
		return nil, validation("SortOrder %q is not valid; use Ascending or Descending", in.SortOrder)
	}
	pg, tok := page(op, keep, cur, size)
	summaries := make([]map[string]any, len(pg))
	for i, it := range pg {
		summaries[i] = it.summary
	}
	key := "Endpoints"
	if op == "ListInferenceComponents" {
		key = "InferenceComponents"
	}
	out := map[string]any{key: summaries}
	if tok != "" {
		out["NextToken"] = tok
	}
	return out, nil
}

func describeSageMaker(op string, in smNames, eps []*endpoint) (any, *apiErr) {
	switch op {
	case "DescribeEndpoint":
		for _, e := range eps {
			if e.name == in.EndpointName {
				return map[string]any{
					"EndpointName": e.name, "EndpointArn": e.arn, "EndpointConfigName": e.config, "EndpointStatus": e.status,
					"CreationTime": epoch(e.created), "LastModifiedTime": epoch(e.modified),
					"ProductionVariants": []map[string]any{{
						"VariantName": e.variant.name, "CurrentInstanceCount": e.variant.instances, "DesiredInstanceCount": e.variant.instances,
						"CurrentWeight": 1.0, "DesiredWeight": 1.0,
					}},
				}, nil
			}
		}
		return nil, validation("Could not find endpoint %q.", in.EndpointName)
	case "DescribeEndpointConfig":
		for _, e := range eps {
			if e.config == in.EndpointConfigName {
				v := map[string]any{"VariantName": e.variant.name, "InstanceType": e.variant.instanceType,
					"InitialInstanceCount": e.variant.instances, "InitialVariantWeight": 1.0}
				if e.model != "" {
					v["ModelName"] = e.model
				}
				return map[string]any{
					"EndpointConfigName": e.config, "EndpointConfigArn": strings.Replace(e.arn, ":endpoint/", ":endpoint-config/", 1) + "-config",
					"CreationTime": epoch(e.created), "ProductionVariants": []map[string]any{v},
				}, nil
			}
		}
		return nil, validation("Could not find endpoint configuration %q.", in.EndpointConfigName)
	default: // DescribeInferenceComponent
		for _, e := range eps {
			for _, c := range e.components {
				if c.name == in.InferenceComponentName {
					return map[string]any{
						"InferenceComponentName": c.name, "InferenceComponentArn": c.arn, "InferenceComponentStatus": c.status,
						"EndpointName": c.endpoint, "EndpointArn": c.endpointARN, "VariantName": c.variant,
						"CreationTime": epoch(c.created), "LastModifiedTime": epoch(c.modified),
						"Specification": map[string]any{"ModelName": c.model, "Container": map[string]any{"DeployedImage": map[string]any{"SpecifiedImage": c.image}},
							"ComputeResourceRequirements": map[string]any{"NumberOfAcceleratorDevicesRequired": float64(c.gpus), "MinMemoryRequiredInMb": 1024}},
						"RuntimeConfig": map[string]any{"CurrentCopyCount": c.copies, "DesiredCopyCount": c.copies},
					}, nil
				}
			}
		}
		return nil, validation("Could not find inference component %q.", in.InferenceComponentName)
	}
}

// epoch is a timestamp as awsJson1_1 writes it: epoch seconds.
func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1e3 }

func jsonResponse(status int, body []byte, errType string) emulator.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.1")
	if errType != "" {
		h.Set("X-Amzn-ErrorType", errType)
	}
	return emulator.Response{Status: status, Header: h, Body: body}
}

// jsonError renders an awsJson1_1 error: __type and message in the body, the type in
// X-Amzn-ErrorType.
func jsonError(e *apiErr) emulator.Response {
	b, _ := json.Marshal(map[string]string{"__type": e.code, "message": e.msg}) // strings always encode
	return jsonResponse(e.status, b, e.code)
}

// jsonFailure renders an emulator failure as SageMaker does.
func jsonFailure(f emulator.Failure) emulator.Response {
	return jsonError(failureErr(f, map[emulator.FailureKind]apiErr{
		emulator.FailAccessDenied: {status: http.StatusBadRequest, code: "AccessDeniedException"},
		emulator.FailThrottled:    {status: http.StatusBadRequest, code: "ThrottlingException"},
		emulator.FailUnavailable:  {status: http.StatusServiceUnavailable, code: "ServiceUnavailable"},
		emulator.FailInternal:     {status: http.StatusInternalServerError, code: "InternalFailure"},
	}))
}
