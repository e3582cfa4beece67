package awsapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// The fake answers as the services do on the wire: CloudWatch in Smithy RPC v2 CBOR at
// /service/GraniteServiceVersion20100801/operation/<Op>, SageMaker in awsJson1_1 at / with
// X-Amz-Target, Application Auto Scaling likewise, each checking the SigV4 signature for its own service and the region.

const (
	testRegion = "us-east-1"
	testKey    = "AKIDAWSAPITESTKEY001"
	testSecret = "awsapi/test+secret/key/0123456789abcdefghij"
	testToken  = "awsapi-session-token-0123456789"
	cwPath     = "/service/GraniteServiceVersion20100801/operation/"
)

// reply is one answer. body is a cbor.Value (CloudWatch) or JSON-encodable (SageMaker);
// raw, when set, is sent as is instead.
type reply struct {
	status int
	body   any
	raw    []byte
	header map[string]string
}

type fakeAWS struct {
	t        testing.TB
	verifier map[string]*sigv4verify.Verifier // by SigV4 service name
	cw       map[string]func(in cbor.Map) reply
	sm       map[string]func(in map[string]any) reply
	aas      map[string]func(in map[string]any) reply // Application Auto Scaling
	prefix   string                                   // the custom endpoint's path, if it has one

	mu    sync.Mutex
	calls []string // "CloudWatch.<Op>" / "SageMaker.<Op>" in arrival order
	hosts map[string]bool
}

func newFake(t testing.TB, region string) *fakeAWS {
	creds := map[string]sigv4verify.Credential{testKey: {AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: testToken}}
	return &fakeAWS{
		t: t,
		verifier: map[string]*sigv4verify.Verifier{
			"monitoring":              {Region: region, Service: "monitoring", Credentials: creds},
			"sagemaker":               {Region: region, Service: "sagemaker", Credentials: creds},
			"application-autoscaling": {Region: region, Service: "application-autoscaling", Credentials: creds},
		},
		cw:    map[string]func(cbor.Map) reply{},
		sm:    map[string]func(map[string]any) reply{},
		aas:   map[string]func(map[string]any) reply{},
		hosts: map[string]bool{},
	}
}

func (f *fakeAWS) record(call, host string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	f.hosts[host] = true
}

func (f *fakeAWS) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, f.prefix)
	if !ok {
		f.t.Errorf("request for %s misses the endpoint's path %s", r.URL.Path, f.prefix)
	}
	if path == "" {
		path = "/"
	}
	if ua := r.Header.Get("User-Agent"); !strings.Contains(ua, "app/"+models.PluginID) {
		f.t.Errorf("User-Agent %q does not name the plugin", ua)
	}
	switch {
	case strings.HasPrefix(path, cwPath):
		op := strings.TrimPrefix(path, cwPath)
		if r.Method != http.MethodPost || r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" {
			f.t.Errorf("CloudWatch %s: %s with smithy-protocol %q, want POST rpc-v2-cbor", op, r.Method, r.Header.Get("Smithy-Protocol"))
		}
		if err := f.verifier["monitoring"].Verify(r); err != nil {
			f.reportAuth("CloudWatch "+op, err)
			sigv4verify.WriteAuthError(w, err)
			return
		}
		f.record("CloudWatch."+op, r.Host)
		in := cbor.Map{}
		if body, _ := io.ReadAll(r.Body); len(body) > 0 {
			v, err := cbor.Decode(body)
			m, ok := v.(cbor.Map)
			if err != nil || !ok {
				f.t.Errorf("CloudWatch %s: request body is not a CBOR map: %v", op, err)
			}
			in = m
		}
		h := f.cw[op]
		if h == nil {
			f.t.Errorf("unexpected CloudWatch operation %s", op)
			return
		}
		f.write(w, h(in), "application/cbor", func(v any) []byte { return cbor.Encode(v.(cbor.Value)) })
	case path == "/" && strings.HasPrefix(r.Header.Get("X-Amz-Target"), "SageMaker."):
		f.serveJSON(w, r, "SageMaker", "sagemaker", f.sm)
	case path == "/" && strings.HasPrefix(r.Header.Get("X-Amz-Target"), "AnyScaleFrontendService."):
		f.serveJSON(w, r, "AnyScaleFrontendService", "application-autoscaling", f.aas)
	default:
		f.t.Errorf("unexpected request %s %s (target %q)", r.Method, r.URL, r.Header.Get("X-Amz-Target"))
		w.WriteHeader(http.StatusNotFound)
	}
}

// serveJSON answers an awsJson1_1 call of the service whose X-Amz-Target prefix is name,
// signed for signing.
func (f *fakeAWS) serveJSON(w http.ResponseWriter, r *http.Request, name, signing string, handlers map[string]func(map[string]any) reply) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), name+".")
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		f.t.Errorf("%s %s: content type %q", name, op, ct)
	}
	if err := f.verifier[signing].Verify(r); err != nil {
		f.reportAuth(name+" "+op, err)
		sigv4verify.WriteAuthError(w, err)
		return
	}
	f.record(name+"."+op, r.Host)
	in := map[string]any{}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		f.t.Errorf("%s %s: request body: %v", name, op, err)
	}
	h := handlers[op]
	if h == nil {
		f.t.Errorf("unexpected %s operation %s", name, op)
		return
	}
	f.write(w, h(in), "application/x-amz-json-1.1", func(v any) []byte { b, _ := json.Marshal(v); return b })
}

// reportAuth fails the test for a refused signature, but not for a request whose client
// went away while sending it (a sibling call failed and canceled the rest).
func (f *fakeAWS) reportAuth(call string, err error) {
	var ae *sigv4verify.AuthError
	if errors.As(err, &ae) && strings.Contains(ae.Message, "reading the request body") {
		return
	}
	f.t.Errorf("%s: signature: %v", call, err)
}

func (f *fakeAWS) write(w http.ResponseWriter, rep reply, contentType string, encode func(any) []byte) {
	body := rep.raw
	if body == nil && rep.body != nil {
		body = encode(rep.body)
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Amzn-RequestId", "req-0001")
	if contentType == "application/cbor" {
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	w.WriteHeader(rep.status)
	w.Write(body)
}

// cwError is a CloudWatch error as the query-compatible service sends it: the Smithy type
// in the body, the awsQuery code in X-Amzn-Query-Error.
func cwError(status int, code, queryCode, msg string) reply {
	rep := reply{status: status, body: cbor.Map{"__type": cbor.String("com.amazonaws.cloudwatch#" + code), "message": cbor.String(msg)}}
	if queryCode != "" {
		rep.header = map[string]string{"X-Amzn-Query-Error": queryCode + ";Sender"}
	}
	return rep
}

func smError(status int, code, msg string) reply {
	return reply{status: status, body: map[string]string{"__type": code, "message": msg}}
}

func cs(s string) cbor.Value { return cbor.String(s) }

func ctime(t time.Time) cbor.Value {
	return &cbor.Tag{ID: 1, Value: cbor.Float64(float64(t.UnixMilli()) / 1e3)}
}

func cstr(in cbor.Map, key string) string {
	s, _ := in[key].(cbor.String)
	return string(s)
}

// secrets records what the client reports as used for signing.
type secrets struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (s *secrets) Add(v ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	for _, x := range v {
		s.seen[x] = true
	}
}

func (s *secrets) has(v string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[v]
}

func testSettings(endpoint, region string) awsauth.Settings {
	return awsauth.Settings{AuthType: awsauth.AuthKeys, AccessKey: testKey, SecretKey: testSecret, SessionToken: testToken, Region: region, Endpoint: endpoint}
}

// noWait keeps retries instant in tests.
var noWait = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })

// newTestClient serves f on loopback and returns a client configured with it as the
// custom endpoint.
func newTestClient(t testing.TB, f *fakeAWS, o options) (*client, *secrets) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return clientFor(t, testSettings(srv.URL, testRegion), o)
}

func clientFor(t testing.TB, s awsauth.Settings, o options) (*client, *secrets) {
	t.Helper()
	ep, err := awsauth.ResolveEndpoint(s)
	if err != nil {
		t.Fatal(err)
	}
	if o.backoff == nil {
		o.backoff = noWait
	}
	sink := &secrets{}
	c, err := newClient(context.Background(), s, ep, sink, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c, sink
}

// inMemory serves requests for any host with h, without a network: for the real AWS
// hosts, which tests must not reach.
type inMemory struct{ h http.Handler }

func (m inMemory) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(strings.NewReader(string(b)))
	}
	r.Host = r.URL.Host
	r.RequestURI = r.URL.RequestURI()
	rec := httptest.NewRecorder()
	m.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

var errNotSent = errors.New("test transport: must not be called")

// refuseAll fails the test if anything reaches the transport.
type refuseAll struct{ t *testing.T }

func (r refuseAll) RoundTrip(req *http.Request) (*http.Response, error) {
	r.t.Errorf("request for %s reached the transport", req.URL)
	return nil, errNotSent
}
