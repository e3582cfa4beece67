// Package awsemu is the emulator's AWS control plane: CloudWatch DescribeAlarms,
// DescribeAlarmContributors and DescribeAlarmHistory in Smithy RPC v2 CBOR, and SageMaker
// ListEndpoints, DescribeEndpoint, DescribeEndpointConfig, ListInferenceComponents and
// DescribeInferenceComponent in awsJson1_1, the Price List API's GetProducts (pricing.go)
// and Application Auto Scaling's DescribeScalableTargets and DescribeScalingPolicies
// (autoscaling.go) and CloudTrail's LookupEvents (cloudtrail.go) in awsJson1_1 too, and STS's
// GetCallerIdentity (sts.go) in the Query protocol, as aws-sdk-go-v2 (service/cloudwatch
// v1.75.7, service/sagemaker v1.288.1, service/applicationautoscaling v1.51.12,
// service/cloudtrail v1.56.0, service/sts v1.52.0) sends them. It
// implements emulator.ControlPlane: the emulator verifies SigV4 for the call's service,
// denies and injects faults; this package speaks the protocols. Alarms are the fleet's
// PromQL alarms evaluated on the emulator's engine; the inventory is the fleet with the
// simulator's copy counts and changes.
package awsemu

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/simulator"
)

// Config describes what the control plane serves.
type Config struct {
	Fleet *fleet.Fleet
	// Origin is the start of the simulated history: alarms are evaluated from there on,
	// and resources were created before it.
	Origin time.Time
	// Head is the time of the newest sample (the TSDB head); alarms are evaluated up to it.
	Head func() time.Time
	// Deployments are the current copies and scaling times (simulator.Deployments); nil
	// uses the fleet's initial copies.
	Deployments func() []simulator.Deployment
	// Changes are the fleet's management calls so far (simulator.Changes): LookupEvents
	// serves them and the inventory shows them. Nil: no changes.
	Changes func() []simulator.Change
	// LookupUnlimited turns off LookupEvents' 2 calls a second, for sweeps that diagnose
	// hundreds of times (as emulator.Limits' negative rates do for PromQL).
	LookupUnlimited bool
}

// Server implements emulator.ControlPlane.
type Server struct {
	cfg     Config
	alarm   *evaluator
	lookups *rate.Limiter // LookupEvents' rate, of the one account and region the signer is in
}

// New checks cfg and builds the control plane.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Fleet == nil:
		return nil, errors.New("awsemu: no fleet; pass the fleet the simulator runs")
	case cfg.Head == nil || cfg.Origin.IsZero():
		return nil, errors.New("awsemu: Origin and Head are required (the history's start and the TSDB head time)")
	}
	lookups := rate.NewLimiter(lookupPerSecond, lookupBurst)
	if cfg.LookupUnlimited {
		lookups = rate.NewLimiter(rate.Inf, 0)
	}
	return &Server{cfg: cfg, alarm: newEvaluator(cfg.Fleet.AlarmDefs(), cfg.Fleet.Region, cfg.Fleet.Account, cfg.Origin),
		lookups: lookups}, nil
}

// Wire constants of the two protocols.
const (
	cborPathPrefix = "/service/GraniteServiceVersion20100801/operation/"
	sagemakerTgt   = "SageMaker."
	svcCloudWatch  = "monitoring"
	svcSageMaker   = "sagemaker"
)

var (
	cloudWatchOps = []string{"DescribeAlarms", "DescribeAlarmContributors", "DescribeAlarmHistory"}
	sageMakerOps  = []string{"ListEndpoints", "DescribeEndpoint", "DescribeEndpointConfig", "ListInferenceComponents", "DescribeInferenceComponent", "ListTags"}
)

// Actions implements emulator.ControlPlane.
func (s *Server) Actions() []string {
	var out []string
	for _, op := range cloudWatchOps {
		out = append(out, "cloudwatch:"+op)
	}
	for _, op := range sageMakerOps {
		out = append(out, "sagemaker:"+op)
	}
	for _, op := range pricingOps {
		out = append(out, "pricing:"+op)
	}
	for _, op := range autoScalingOps {
		out = append(out, svcAutoScaling+":"+op)
	}
	for _, op := range cloudTrailOps {
		out = append(out, "cloudtrail:"+op)
	}
	for _, op := range stsOps {
		out = append(out, svcSTS+":"+op)
	}
	return out
}

// Route implements emulator.ControlPlane: CloudWatch by its RPC v2 path, SageMaker, the
// Price List API, Application Auto Scaling and CloudTrail by their X-Amz-Target, STS by its
// Query protocol's form.
func (s *Server) Route(r *http.Request) (emulator.Call, bool) {
	if op, ok := strings.CutPrefix(r.URL.Path, cborPathPrefix); ok {
		return emulator.Call{Service: svcCloudWatch, Action: "cloudwatch:" + op, Operation: op}, true
	}
	if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), sagemakerTgt); ok {
		return emulator.Call{Service: svcSageMaker, Action: "sagemaker:" + op, Operation: op}, true
	}
	if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), pricingTgt); ok {
		return emulator.Call{Service: svcPricing, Action: "pricing:" + op, Operation: op}, true
	}
	if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), autoScalingTgt); ok {
		return emulator.Call{Service: svcAutoScaling, Action: svcAutoScaling + ":" + op, Operation: op}, true
	}
	if op, ok := strings.CutPrefix(strings.TrimPrefix(r.Header.Get("X-Amz-Target"), cloudTrailFull), cloudTrailTgt); ok {
		return emulator.Call{Service: svcCloudTrail, Action: "cloudtrail:" + op, Operation: op}, true
	}
	return routeSTS(r)
}

// Serve implements emulator.ControlPlane.
func (s *Server) Serve(ctx context.Context, c emulator.Call, body []byte, q emulator.Querier) emulator.Response {
	switch c.Service {
	case svcCloudWatch:
		return s.serveCloudWatch(ctx, c, body, q)
	case svcPricing:
		return s.servePricing(c, body)
	case svcAutoScaling:
		return s.serveAutoScaling(c, body)
	case svcCloudTrail:
		return s.serveCloudTrail(c, body)
	case svcSTS:
		return s.serveSTS(c, body)
	}
	return s.serveSageMaker(c, body)
}

// Fail implements emulator.ControlPlane.
func (s *Server) Fail(c emulator.Call, f emulator.Failure) emulator.Response {
	switch c.Service {
	case svcCloudWatch:
		return cborFailure(f)
	case svcSTS:
		return stsFailure(f)
	}
	return jsonFailure(f)
}

// apiErr is a modelled error of an operation, before its protocol renders it.
type apiErr struct {
	status int
	code   string // the error shape's name
	query  string // CloudWatch's awsQuery-compatible code (X-Amzn-Query-Error)
	msg    string
}

func (e *apiErr) Error() string { return e.code + ": " + e.msg }

// head is the evaluation horizon: the newest sample's time.
func (s *Server) head() time.Time { return s.cfg.Head() }

func (s *Server) endpoints() []*endpoint {
	var deps []simulator.Deployment
	if s.cfg.Deployments != nil {
		deps = s.cfg.Deployments()
	}
	return inventory(s.cfg.Fleet, deps, s.changes(), s.cfg.Origin)
}

// Pagination tokens are opaque to clients: the operation, the offset of the next item and
// the evaluation horizon of the first page (ms; 0 when the listing does not change with
// time), so a token from one operation is refused by another and the pages of a history
// stay consistent while live evaluation adds transitions.
type cursor struct {
	off  int
	asOf int64
}

func pageToken(op string, c cursor) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s:%d:%d", op, c.off, c.asOf))
}

func parseToken(op, tok string) (cursor, bool) {
	if tok == "" {
		return cursor{}, true
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return cursor{}, false
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != op {
		return cursor{}, false
	}
	off, err1 := strconv.Atoi(parts[1])
	asOf, err2 := strconv.ParseInt(parts[2], 10, 64)
	return cursor{off, asOf}, err1 == nil && err2 == nil && off >= 0 && asOf >= 0
}

// page cuts items [c.off, c.off+size) and returns the token of the rest ("" at the end).
func page[T any](op string, items []T, c cursor, size int) ([]T, string) {
	if c.off >= len(items) {
		return nil, ""
	}
	end := min(len(items), c.off+size)
	if end == len(items) {
		return items[c.off:end], ""
	}
	return items[c.off:end], pageToken(op, cursor{end, c.asOf})
}

// pageSize checks a MaxRecords/MaxResults value against [1, limit] (def when absent); the
// string says what is wrong.
func pageSize(field string, v *int64, def, limit int) (int, string) {
	if v == nil {
		return def, ""
	}
	if *v < 1 || *v > int64(limit) {
		return 0, fmt.Sprintf("%s %d is out of range; use 1 to %d", field, *v, limit)
	}
	return int(*v), ""
}
