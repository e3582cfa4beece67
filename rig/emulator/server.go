package emulator

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
)

// maxBodyBytes bounds a form POST body [I: CloudWatch's limit is undocumented, Q7].
const maxBodyBytes = 1 << 20

// maxSamples is Prometheus' default cap on samples held in memory at once, kept as a
// safety net; CloudWatch's own caps are the scan limits in Limits.
const maxSamples = 50_000_000

// Server is the CloudWatch PromQL API emulator; it implements http.Handler.
type Server struct {
	cfg    Config
	limits Limits
	now    func() time.Time
	db     storage.Queryable
	engine *promql.Engine
	parser parser.Parser
	faults *faultInjector
	// verifiers check control-plane calls, one per SigV4 service.
	verifiers map[string]*sigv4verify.Verifier

	// acct holds the CloudWatch rate and concurrency gates: the account's, shared through
	// Config.Accounts, or this server's own.
	acct *Account
}

// New returns an emulator serving db, which must hold series in CloudWatch's shape
// (bare datapoint labels, @resource.*, @aws.*). Native histograms are queried as such.
func New(cfg Config, db storage.Queryable) (*Server, error) {
	if db == nil {
		return nil, errors.New("emulator: no storage given; pass the TSDB the fleet simulator writes to")
	}
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	if err := cfg.Faults.validate(); err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	if v := cfg.Verifier; v != nil && v.Region == "" {
		if cfg.Region == "" {
			return nil, errors.New("emulator: the verifier has no region; set Config.Region (e.g. us-east-1)")
		}
		vc := *v // the caller's verifier stays untouched
		vc.Region = cfg.Region
		cfg.Verifier = &vc
	}
	if err := checkDeny(cfg.Deny, cfg.ControlPlane); err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	verifiers := map[string]*sigv4verify.Verifier{}
	if cfg.Verifier != nil && cfg.ControlPlane != nil {
		for _, a := range cfg.ControlPlane.Actions() {
			svc := serviceOf(a)
			v := *cfg.Verifier
			v.Service = svc
			verifiers[svc] = &v
		}
	}
	now, rateClock := cfg.Now, cfg.RateClock
	if now == nil {
		now = time.Now
	}
	if rateClock == nil {
		rateClock = time.Now
	}
	var acct *Account
	if cfg.Accounts != nil {
		acct, err = cfg.Accounts.join(accountID(cfg.Account), limits, rateClock)
	} else {
		acct = newAccount(accountID(cfg.Account), limits, rateClock)
	}
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	// Prometheus 3 parser: UTF-8 names must be quoted, as on CloudWatch (notes §10.2).
	p := parser.NewParser(parser.Options{})
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples:           maxSamples,
		Timeout:              limits.Timeout,
		LookbackDelta:        limits.LookbackDelta,
		EnableAtModifier:     true,
		EnableNegativeOffset: true,
		// Cost accounting carries the per-query scan caps set in evaluate.
		EnableQueryCost: limits.scanCaps(),
		Parser:          p,
	})
	return &Server{
		cfg:       cfg,
		limits:    limits,
		now:       now,
		db:        aliasQueryable{db},
		engine:    engine,
		parser:    p,
		faults:    newFaultInjector(cfg.Faults, rateClock),
		verifiers: verifiers,
		acct:      acct,
	}, nil
}

const labelValuesPrefix, labelValuesSuffix = "/api/v1/label/", "/values"

// ServeHTTP authenticates, routes, applies faults and limits, then answers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if cp := s.cfg.ControlPlane; cp != nil {
		if c, ok := cp.Route(r); ok {
			s.serveControl(w, r, c)
			return
		}
	}
	if s.cfg.Verifier != nil {
		if err := s.verify(s.cfg.Verifier, r); err != nil {
			sigv4verify.WriteAuthError(w, err)
			return
		}
	}
	w.Header().Set("x-amzn-RequestId", sigv4verify.NewRequestID())
	handler, g, aerr := s.route(r)
	if aerr != nil {
		s.writeResult(w, result{err: aerr})
		return
	}
	releaseFault, aerr := s.faults.before(r.Context())
	if aerr != nil {
		s.writeResult(w, result{err: aerr})
		return
	}
	defer releaseFault()
	release, aerr := g.enter()
	if aerr != nil {
		s.writeResult(w, result{err: aerr})
		return
	}
	defer release()
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		s.writeResult(w, result{err: badData("cannot parse the request parameters: %v; send a URL query string or an application/x-www-form-urlencoded body", err)})
		return
	}
	res := handler(r)
	s.writeResult(w, res)
	if res.done != nil {
		res.done()
	}
}

// Account is the account whose limits this server enforces: shared with every server of
// the same Config.Accounts and Config.Account, else its own.
func (s *Server) Account() *Account { return s.acct }

// verify checks r's signature with v and reports the outcome to Config.Verified.
func (s *Server) verify(v *sigv4verify.Verifier, r *http.Request) error {
	err := v.Verify(r)
	if s.cfg.Verified != nil {
		s.cfg.Verified(err)
	}
	return err
}

// route picks the handler and limit class for the path, or the 404/405 to answer.
func (s *Server) route(r *http.Request) (func(*http.Request) result, *gate, *apiError) {
	path := r.URL.Path
	getOrPost := r.Method == http.MethodGet || r.Method == http.MethodPost
	var h func(*http.Request) result
	g := &s.acct.discovery
	switch path {
	case "/api/v1/query":
		h, g = s.handleQuery, &s.acct.query
	case "/api/v1/query_range":
		h, g = s.handleQueryRange, &s.acct.query
	case "/api/v1/series":
		h = s.handleSeries
	case "/api/v1/labels":
		h = s.handleLabels
	default:
		// Cut the escaped path so that an encoded "/" stays inside the label name.
		escaped, ok := strings.CutPrefix(r.URL.EscapedPath(), labelValuesPrefix)
		if ok {
			escaped, ok = strings.CutSuffix(escaped, labelValuesSuffix)
		}
		var name string
		if ok && !strings.Contains(escaped, "/") {
			var err error
			name, err = url.PathUnescape(escaped)
			ok = err == nil && name != ""
		} else {
			ok = false
		}
		if !ok {
			return nil, nil, newAPIError(http.StatusNotFound, errNotFound, "%s is not part of the CloudWatch PromQL API; use /api/v1/query, query_range, series, labels or label/<name>/values", path)
		}
		if r.Method != http.MethodGet {
			return nil, nil, newAPIError(http.StatusMethodNotAllowed, errMethod, "%s %s is not allowed: label values are GET only", r.Method, path)
		}
		return func(r *http.Request) result { return s.handleLabelValues(r, name) }, g, nil
	}
	if !getOrPost {
		return nil, nil, newAPIError(http.StatusMethodNotAllowed, errMethod, "%s %s is not allowed; use GET or POST", r.Method, path)
	}
	return h, g, nil
}

// labelName validates a label name from the path: UTF-8, or Prometheus 3's U__ escaping.
func labelName(raw string) (string, *apiError) {
	name := raw
	if strings.HasPrefix(name, "U__") {
		name = model.UnescapeName(name, model.ValueEncodingEscaping)
	}
	if !model.UTF8Validation.IsValidLabelName(name) {
		return "", badData("invalid label name: %q", raw)
	}
	return name, nil
}
