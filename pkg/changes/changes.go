// Package changes reads the fleet's management events from CloudTrail (SageMaker and
// Application Auto Scaling) into Changes: who changed which resource when, and what the
// call set. It is pure: pkg/awsapi fetches the events, this package parses them.
//
// Only what a change review needs leaves an event: the identity's ARN (never its access
// key, session token, session context or anything else of userIdentity), the event's
// name, time, id, region and account, the resource, and the settings the call changed
// (image, model data, model, instance type, copy count, config name, scaling target).
// Container environments, tags and every other request field are never read, so a secret
// in them cannot reach the output.
package changes

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Event sources the plugin looks up.
const (
	SourceSageMaker   = "sagemaker.amazonaws.com"
	SourceAutoScaling = "application-autoscaling.amazonaws.com"
)

// Events are the management events that change what a fleet serves, by source. Read-only
// calls (Describe*, List*) change nothing and are not looked up.
var Events = map[string][]string{
	SourceSageMaker: {
		"CreateEndpoint", "CreateEndpointConfig", "UpdateEndpoint", "UpdateEndpointWeightsAndCapacities", "DeleteEndpoint",
		"CreateInferenceComponent", "UpdateInferenceComponent", "UpdateInferenceComponentRuntimeConfig", "DeleteInferenceComponent",
	},
	SourceAutoScaling: {"PutScalingPolicy", "DeleteScalingPolicy", "RegisterScalableTarget", "DeregisterScalableTarget"},
}

// Resource kinds a change is about.
const (
	KindEndpoint       = "endpoint"
	KindEndpointConfig = "endpoint-config"
	KindComponent      = "inference-component"
)

// Fields of a Delta.
const (
	FieldImage         = "image"
	FieldModelData     = "model data"
	FieldModel         = "model"
	FieldInstanceType  = "instance type"
	FieldCopies        = "copy count"
	FieldInstances     = "instance count"
	FieldConfig        = "endpoint config"
	FieldScalingTarget = "scaling target"
	FieldScalingPolicy = "scaling policy"
	FieldMinCapacity   = "min capacity"
	FieldMaxCapacity   = "max capacity"
)

// Change is one management call that changed a resource of the fleet.
type Change struct {
	Time     time.Time `json:"time"`
	Who      string    `json:"who"` // the identity's ARN as CloudTrail gives it, or the AWS service that called
	Action   string    `json:"action"`
	Source   string    `json:"source"`
	Kind     string    `json:"kind"`     // KindEndpoint, KindEndpointConfig or KindComponent
	Resource string    `json:"resource"` // its name
	// Endpoint is the endpoint the resource belongs to when the event names it (an
	// endpoint's own changes, a new IC, an endpoint variant's scaling target).
	Endpoint string  `json:"endpoint,omitempty"`
	Region   string  `json:"region"`
	Account  string  `json:"account"`
	EventID  string  `json:"eventId"`
	Diff     []Delta `json:"diff,omitempty"`
}

// Delta is one setting a change set: From is the value before when an earlier change in
// the same listing set it (see Chain), else empty; From equal to To is a call that set
// the same value again.
type Delta struct {
	Field string `json:"field"`
	From  string `json:"from,omitempty"`
	To    string `json:"to"`
}

// Bounds of what is read from one event.
const (
	maxEventBytes = 256 << 10 // CloudTrail's own limit for one record is 256 KiB
	maxValueRunes = 512
	maxVariants   = 16
)

// ErrNotAChange is Parse's answer for an event that changed nothing: a read-only call, a
// call that failed (errorCode set), or an event the plugin does not look up.
var ErrNotAChange = errors.New("not a change")

// record is the part of a CloudTrail record Parse reads. userIdentity is read for arn,
// type and invokedBy only, so its keys and tokens are never decoded.
type record struct {
	EventTime    string `json:"eventTime"`
	EventSource  string `json:"eventSource"`
	EventName    string `json:"eventName"`
	AWSRegion    string `json:"awsRegion"`
	EventID      string `json:"eventID"`
	ErrorCode    string `json:"errorCode"`
	ReadOnly     *bool  `json:"readOnly"`
	Recipient    string `json:"recipientAccountId"`
	UserIdentity struct {
		Type      string `json:"type"`
		ARN       string `json:"arn"`
		AccountID string `json:"accountId"`
		InvokedBy string `json:"invokedBy"`
	} `json:"userIdentity"`
	Request  map[string]any `json:"requestParameters"`
	Response map[string]any `json:"responseElements"`
}

// Parse turns one CloudTrail record (LookupEvents' CloudTrailEvent string) into a Change.
// It returns ErrNotAChange for events that changed nothing, and an error naming the
// problem for a record that is not one.
func Parse(event string) (Change, error) {
	if len(event) > maxEventBytes {
		return Change{}, fmt.Errorf("the CloudTrail record is %d KiB, more than CloudTrail's 256 KiB", len(event)>>10)
	}
	var r record
	if err := json.Unmarshal([]byte(event), &r); err != nil {
		return Change{}, fmt.Errorf("the CloudTrail record is not JSON: %w", err)
	}
	if !slices.Contains(Events[r.EventSource], r.EventName) || r.ErrorCode != "" || (r.ReadOnly != nil && *r.ReadOnly) {
		return Change{}, ErrNotAChange
	}
	at, err := time.Parse(time.RFC3339, r.EventTime)
	// Year 1 parses but is Go's zero time, which every reader takes for "no time".
	if err != nil || at.IsZero() {
		return Change{}, fmt.Errorf("%s: eventTime %q is not an RFC 3339 time", r.EventName, clean(r.EventTime))
	}
	c := Change{
		Time: at.UTC(), Who: who(r), Action: r.EventName, Source: r.EventSource,
		Region: clean(r.AWSRegion), Account: clean(r.Recipient), EventID: clean(r.EventID),
	}
	if c.Account == "" {
		c.Account = clean(r.UserIdentity.AccountID)
	}
	p := params(r.Request)
	if r.EventSource == SourceAutoScaling {
		err = scaling(&c, p)
	} else {
		err = sagemaker(&c, p)
	}
	if err != nil {
		return Change{}, fmt.Errorf("%s event %s: %w", r.EventName, c.EventID, err)
	}
	return c, nil
}

// who is the identity's ARN; a call an AWS service made on its own (no ARN) is that
// service's name. Nothing else of userIdentity is kept.
func who(r record) string {
	if a := clean(r.UserIdentity.ARN); strings.HasPrefix(a, "arn:") {
		return a
	}
	if s := clean(r.UserIdentity.InvokedBy); strings.HasSuffix(s, ".amazonaws.com") {
		return s
	}
	return ""
}

// params reads request parameters by name whatever the case of their first letter:
// CloudTrail writes SageMaker's and Application Auto Scaling's in camelCase, the APIs
// themselves in PascalCase.
type params map[string]any

func (p params) get(name string) any {
	if v, ok := p[name]; ok {
		return v
	}
	r, n := utf8.DecodeRuneInString(name)
	return p[string(unicode.ToLower(r))+name[n:]]
}

func (p params) str(name string) string {
	switch v := p.get(name).(type) {
	case string:
		return clean(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

func (p params) obj(name string) params {
	m, _ := p.get(name).(map[string]any)
	return m
}

func (p params) list(name string) []params {
	l, _ := p.get(name).([]any)
	var out []params
	for _, v := range l[:min(len(l), maxVariants)] {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func (c *Change) set(field, value string) {
	if value != "" {
		c.Diff = append(c.Diff, Delta{Field: field, To: value})
	}
}

func sagemaker(c *Change, p params) error {
	switch c.Action {
	case "CreateEndpointConfig":
		c.Kind, c.Resource = KindEndpointConfig, p.str("EndpointConfigName")
		for _, v := range p.list("ProductionVariants") {
			prefix := ""
			if name := v.str("VariantName"); name != "" {
				prefix = name + " "
			}
			c.set(prefix+FieldModel, v.str("ModelName"))
			c.set(prefix+FieldInstanceType, v.str("InstanceType"))
			c.set(prefix+FieldInstances, v.str("InitialInstanceCount"))
		}
	case "CreateEndpoint", "UpdateEndpoint":
		c.Kind, c.Resource = KindEndpoint, p.str("EndpointName")
		c.set(FieldConfig, p.str("EndpointConfigName"))
	case "DeleteEndpoint":
		c.Kind, c.Resource = KindEndpoint, p.str("EndpointName")
	case "UpdateEndpointWeightsAndCapacities":
		c.Kind, c.Resource = KindEndpoint, p.str("EndpointName")
		for _, v := range p.list("DesiredWeightsAndCapacities") {
			c.set(v.str("VariantName")+" "+FieldInstances, v.str("DesiredInstanceCount"))
		}
	default: // the inference component calls
		c.Kind, c.Resource = KindComponent, p.str("InferenceComponentName")
		c.Endpoint = p.str("EndpointName")
		spec := p.obj("Specification")
		container := spec.obj("Container")
		c.set(FieldImage, container.str("Image"))
		c.set(FieldModelData, noQuery(container.str("ArtifactUrl")))
		c.set(FieldModel, spec.str("ModelName"))
		c.set(FieldCopies, p.obj("RuntimeConfig").str("CopyCount"))
		c.set(FieldCopies, p.obj("DesiredRuntimeConfig").str("CopyCount"))
	}
	if c.Kind == KindEndpoint {
		c.Endpoint = c.Resource
	}
	if c.Resource == "" {
		return errors.New("the request names no resource")
	}
	return nil
}

// scaling reads an Application Auto Scaling call on a SageMaker scalable target
// ("inference-component/<name>" or "endpoint/<name>/variant/<variant>").
func scaling(c *Change, p params) error {
	if ns := p.str("ServiceNamespace"); ns != "sagemaker" {
		return fmt.Errorf("%w: service namespace %q is not SageMaker", ErrNotAChange, ns)
	}
	id := p.str("ResourceId")
	parts := strings.Split(id, "/")
	switch {
	case len(parts) == 2 && parts[0] == "inference-component" && parts[1] != "":
		c.Kind, c.Resource = KindComponent, parts[1]
	case len(parts) == 4 && parts[0] == "endpoint" && parts[2] == "variant" && parts[1] != "":
		c.Kind, c.Resource, c.Endpoint = KindEndpoint, parts[1], parts[1]
	default:
		return fmt.Errorf("resource id %q is not a SageMaker scalable target (inference-component/<name> or endpoint/<name>/variant/<variant>)", id)
	}
	c.set(FieldScalingTarget, p.str("ScalableDimension"))
	c.set(FieldScalingPolicy, p.str("PolicyName"))
	if tt := p.obj("TargetTrackingScalingPolicyConfiguration"); tt != nil {
		metric := tt.obj("PredefinedMetricSpecification").str("PredefinedMetricType")
		c.set("target "+cmpOr(metric, "value"), tt.str("TargetValue"))
	}
	c.set(FieldMinCapacity, p.str("MinCapacity"))
	c.set(FieldMaxCapacity, p.str("MaxCapacity"))
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// noQuery drops a URL's query and user info: a presigned model URL carries a signature.
func noQuery(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return s
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}

// clean keeps a value printable and bounded: the record is the caller's, the output goes to
// tables and annotations.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > maxValueRunes {
		s = string([]rune(s)[:maxValueRunes]) + "…"
	}
	return strings.TrimSpace(s)
}

// Chain sorts changes by time and fills each Delta's From with the value the latest earlier
// change of the same resource set for the field, so "image 1.3 → 1.4" reads from two
// UpdateInferenceComponent events. An endpoint's config change also takes its From from
// the endpoint's previous UpdateEndpoint or CreateEndpoint.
func Chain(changes []Change) {
	slices.SortStableFunc(changes, func(a, b Change) int { return a.Time.Compare(b.Time) })
	last := map[string]string{}
	for i := range changes {
		c := &changes[i]
		for j := range c.Diff {
			d := &c.Diff[j]
			key := c.Account + "\x00" + c.Region + "\x00" + c.Kind + "\x00" + c.Resource + "\x00" + d.Field
			d.From = last[key]
			last[key] = d.To
		}
	}
}

// DiffText writes what a change set for tables and summaries: "image 0.6.3 → 0.6.4" (an
// image's repository, the same on both sides, left out), "copy count 4"; a value set again
// to what it was is no difference and is left out.
func DiffText(ds []Delta) string {
	var parts []string
	for _, d := range ds {
		from, to := d.From, d.To
		// Only an image's tag follows its repository's ":"; a model data URI's "s3:" is
		// no prefix to trim.
		if i := strings.LastIndex(to, ":"); d.Field == FieldImage && from != "" && i > 0 && strings.HasPrefix(from, to[:i+1]) {
			from, to = from[i+1:], to[i+1:]
		}
		switch {
		case from == to:
		case from == "":
			parts = append(parts, d.Field+" "+to)
		default:
			parts = append(parts, d.Field+" "+from+" → "+to)
		}
	}
	return strings.Join(parts, ", ")
}
