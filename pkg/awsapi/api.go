// Package awsapi reads CloudWatch alarm state, the SageMaker inventory (endpoints,
// variants, inference components) and its autoscaling policies over the data source's
// credential chain, with the same endpoint safety as the PromQL path. It is the seam between the plugin's health model and
// AWS: the plugin and its tests see only API, so tests inject fakes.
package awsapi

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// API is what the plugin asks AWS for besides PromQL. Implementations page through every
// result, retry throttling like promclient does, and return *PermissionError when the
// credentials lack the IAM action.
type API interface {
	// Alarms are the metric and PromQL alarms of the region (DescribeAlarms), optionally
	// only those whose names start with NamePrefix.
	Alarms(ctx context.Context, q AlarmQuery) ([]Alarm, error)
	// Contributors are the series of a multi-series (PromQL) alarm that are in ALARM
	// (DescribeAlarmContributors), so an alarm over every IC can name the one in trouble.
	Contributors(ctx context.Context, alarmName string) ([]Contributor, error)
	// History is the alarms' state transitions in [From, To] (DescribeAlarmHistory,
	// HistoryItemType StateUpdate).
	History(ctx context.Context, q HistoryQuery) ([]Transition, error)
	// Inventory lists endpoints with their config's variants and their inference components
	// (ListEndpoints, DescribeEndpoint, DescribeEndpointConfig, ListInferenceComponents,
	// DescribeInferenceComponent) and their resource tags (ListTags).
	// A missing permission for the inference components or the tags does not fail it: see
	// Inventory.ComponentsErr and TagsErr.
	Inventory(ctx context.Context) (Inventory, error)
	// ProbeAlarms and ProbeInventory are Save & test's cheap checks: one DescribeAlarms
	// (MaxRecords 1) and one ListEndpoints (MaxResults 1), never cached, nothing returned
	// but the error.
	ProbeAlarms(ctx context.Context) error
	ProbeInventory(ctx context.Context) error
	// ScalingTargets are the region's IC copy scalable targets of the caller's account (the
	// only one Application Auto Scaling answers for) with their scaling policies
	// (DescribeScalableTargets, DescribeScalingPolicies). The permission is optional: without it the diagnosis judges
	// overload without the policy.
	ScalingTargets(ctx context.Context) ([]ScalableTarget, error)
	// ProbeScaling is Save & test's check of them: one DescribeScalableTargets and one
	// DescribeScalingPolicies (MaxResults 1 each).
	ProbeScaling(ctx context.Context) error
}

// AlarmQuery narrows DescribeAlarms.
type AlarmQuery struct {
	NamePrefix string
}

// HistoryQuery narrows DescribeAlarmHistory. No names means every alarm.
type HistoryQuery struct {
	From, To   time.Time
	AlarmNames []string
}

// Alarm states as CloudWatch spells them.
const (
	StateOK               = "OK"
	StateAlarm            = "ALARM"
	StateInsufficientData = "INSUFFICIENT_DATA"
)

// Alarm is one CloudWatch alarm as the health model needs it.
type Alarm struct {
	Name, ARN, Description string
	State                  string // StateOK, StateAlarm or StateInsufficientData
	Reason                 string
	Updated                time.Time // when the state last changed
	// A metric alarm names its metric and dimensions (EndpointName, VariantName,
	// InferenceComponentName); a PromQL alarm has PromQL set instead.
	Namespace, Metric string
	Dimensions        map[string]string
	PromQL            string
	Comparison        string // e.g. GreaterThanThreshold; "" for PromQL alarms
	Threshold         *float64
	// Every is how often CloudWatch evaluates the alarm: a PromQL alarm's evaluation
	// interval, else its period (a metric-math alarm's shortest); 0 when not given.
	Every time.Duration
}

// Contributor is one series of a multi-series alarm that is in ALARM.
type Contributor struct {
	ID         string
	Attributes map[string]string // the series' labels
	Reason     string
	Since      time.Time
}

// Transition is one state change of an alarm.
type Transition struct {
	Alarm    string
	Time     time.Time
	From, To string // states; empty when the history item does not say
	Summary  string
	// Contributor is set when the transition is one series of a multi-series alarm.
	Contributor map[string]string
}

// Inventory is the region's SageMaker endpoints.
type Inventory struct {
	Region    string
	Endpoints []Endpoint
	// ComponentsErr is the *PermissionError of ListInferenceComponents or
	// DescribeInferenceComponent: the endpoints and variants are complete, the inference
	// components the credentials may not list or describe are left out.
	ComponentsErr error
	// TagsErr is the *PermissionError of ListTags: the resources are complete, without the
	// tags of those the credentials may not read.
	TagsErr error
}

// Endpoint is one SageMaker endpoint with its configuration's variants and its ICs.
type Endpoint struct {
	Name, ARN, Status, ConfigName string
	FailureReason                 string
	Created, Modified             time.Time
	Variants                      []Variant
	Components                    []Component
	Tags                          map[string]string // resource tags (ListTags); nil without
}

// Variant is one production variant of an endpoint.
type Variant struct {
	Name, InstanceType                 string
	CurrentInstances, DesiredInstances int
}

// Component is one inference component.
type Component struct {
	Name, ARN, Endpoint, Variant, Status string
	Model                                string
	FailureReason                        string
	CurrentCopies, DesiredCopies         int
	Created, Modified                    time.Time
	Tags                                 map[string]string // the IC's own tags; nil without
}

// PermissionError says the credentials may not call an optional action. Save & test turns
// it into a warning naming the IAM action; queries into an error naming it.
type PermissionError struct {
	Action string // IAM action, e.g. "cloudwatch:DescribeAlarms"
	Err    error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("the data source's credentials are not allowed %s: add it to the IAM policy (docs/configure.md) — %v", e.Action, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// IsPermission reports whether err is (or wraps) a *PermissionError.
func IsPermission(err error) bool {
	var p *PermissionError
	return errors.As(err, &p)
}
