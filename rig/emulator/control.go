package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
)

// ControlPlane answers the AWS API calls besides PromQL that share the emulator's listener
// (CloudWatch alarms, SageMaker inventory). The emulator verifies the signature for the
// call's service, applies Config.Deny and the faults; the ControlPlane speaks the wire
// protocol of its service and renders failures in it.
type ControlPlane interface {
	// Route recognises a control-plane request by path or header; false leaves it to the
	// PromQL API. Unknown operations of a recognised protocol are routed too (Serve
	// refuses them in that protocol).
	Route(r *http.Request) (Call, bool)
	// Serve answers one verified, permitted call whose request body is body.
	Serve(ctx context.Context, c Call, body []byte, q Querier) Response
	// Fail renders a failure in the call's protocol.
	Fail(c Call, f Failure) Response
	// Actions are the IAM actions it serves, e.g. "sagemaker:ListEndpoints".
	Actions() []string
}

// Call is one control-plane request: the SigV4 service it must be signed for and the IAM
// action it needs.
type Call struct {
	Service   string // SigV4 signing name: "monitoring", "sagemaker"
	Action    string // IAM action: "cloudwatch:DescribeAlarms"
	Operation string // "DescribeAlarms"
}

// Response is a rendered answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// FailureKind says what went wrong, independent of the protocol that reports it.
type FailureKind int

const (
	FailAuth         FailureKind = iota // signature problems; Code carries the AWS error type
	FailAccessDenied                    // the action is denied (Config.Deny)
	FailThrottled                       // injected TPS or concurrency fault
	FailUnavailable                     // injected error rate
	FailInternal
)

// Failure is a refused call.
type Failure struct {
	Kind    FailureKind
	Status  int    // FailAuth: the verifier's status
	Code    string // FailAuth: the verifier's error type
	Message string
}

// Querier runs a PromQL range query on the emulator's engine; f sees the result before
// its memory is recycled and must not keep it.
type Querier interface {
	QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, f func(promql.Matrix) error) error
}

// QueryRange implements Querier on the engine and storage the PromQL API serves, without
// the API's limits: it is the control plane's own reading of the series.
func (s *Server) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration, f func(promql.Matrix) error) error {
	q, err := s.engine.NewRangeQuery(ctx, s.db, nil, expr, start, end, step)
	if err != nil {
		return err
	}
	defer q.Close()
	res := q.Exec(ctx)
	if res.Err != nil {
		return res.Err
	}
	m, err := res.Matrix()
	if err != nil {
		return fmt.Errorf("query %s: %w", expr, err)
	}
	return f(m)
}

// serviceOf is the SigV4 signing name of an IAM action's service: CloudWatch signs as
// "monitoring", the others as their IAM prefix.
func serviceOf(action string) string {
	prefix, _, _ := strings.Cut(action, ":")
	if prefix == "cloudwatch" {
		return "monitoring"
	}
	return prefix
}

// DenyError is a Config.Deny entry that names no action the control plane serves.
type DenyError struct {
	Action string
	Known  []string
}

func (e *DenyError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("cannot deny %q: only control-plane actions can be denied and there is no ControlPlane", e.Action)
	}
	return fmt.Sprintf("cannot deny %q: not an action the emulator serves; use one of %s", e.Action, strings.Join(e.Known, ", "))
}

// checkDeny validates Config.Deny against the actions the control plane serves.
func checkDeny(deny []string, cp ControlPlane) error {
	var known []string
	if cp != nil {
		known = cp.Actions()
	}
	for _, a := range deny {
		if !slices.Contains(known, a) {
			return &DenyError{Action: a, Known: known}
		}
	}
	return nil
}

// serveControl handles a control-plane call: signature for the call's service, deny list,
// faults, then the control plane's answer (through the body faults).
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request, c Call) {
	cp := s.cfg.ControlPlane
	w.Header().Set("x-amzn-RequestId", sigv4verify.NewRequestID())
	if v := s.verifiers[c.Service]; v != nil {
		if err := s.verify(v, r); err != nil {
			f := Failure{Kind: FailInternal, Status: http.StatusInternalServerError, Message: err.Error()}
			var ae *sigv4verify.AuthError
			if errors.As(err, &ae) {
				f = Failure{Kind: FailAuth, Status: ae.Status, Code: ae.Type, Message: ae.Message}
			}
			s.writeControl(w, cp.Fail(c, f))
			return
		}
	} else if s.cfg.Verifier != nil {
		s.writeControl(w, cp.Fail(c, Failure{Kind: FailInternal, Status: http.StatusInternalServerError, Message: "no verifier for service " + c.Service}))
		return
	}
	if slices.Contains(s.cfg.Deny, c.Action) {
		s.writeControl(w, cp.Fail(c, Failure{Kind: FailAccessDenied, Message: fmt.Sprintf(
			"User: arn:aws:iam::%s:user/emulator is not authorized to perform: %s because no identity-based policy allows the %s action", s.account(), c.Action, c.Action)}))
		return
	}
	release, aerr := s.faults.before(r.Context())
	if aerr != nil {
		kind := FailThrottled
		switch aerr.status {
		case http.StatusServiceUnavailable:
			kind = FailUnavailable
		case 499:
			return // the client is gone
		}
		s.writeControl(w, cp.Fail(c, Failure{Kind: kind, Message: aerr.msg}))
		return
	}
	defer release()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		s.writeControl(w, cp.Fail(c, Failure{Kind: FailInternal, Status: http.StatusBadRequest, Message: "cannot read the request body: " + err.Error()}))
		return
	}
	s.writeControl(w, cp.Serve(r.Context(), c, body, s))
}

func (s *Server) writeControl(w http.ResponseWriter, resp Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	body, declared := s.faults.mangle(resp.Status, resp.Body)
	w.Header().Set("Content-Length", strconv.Itoa(declared))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(body)
}

// account is the account id in access-denied messages: the verifier's only key's owner is
// not known, so the emulator's fleet account stands in.
func (s *Server) account() string { return s.acct.ID }

// accountID is Config.Account, or a documentation-style id when it is empty.
func accountID(configured string) string {
	if configured != "" {
		return configured
	}
	return "123456789012"
}
