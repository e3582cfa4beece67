package fault

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

// call sends one query through a real promclient to baseURL and returns its error.
func call(t *testing.T, baseURL string) error {
	t.Helper()
	u, _ := url.Parse(baseURL)
	c, err := promclient.New(promclient.Options{BaseURL: u, QueryRPS: -1, Retry: promclient.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Query(ctx, "up", time.Now(), 0, nil)
}

// TestNetworkFaultsAreDownstream drives real transport failures and checks they are blamed
// on the network or the endpoint, with advice, and without Go's raw TLS text.
func TestNetworkFaultsAreDownstream(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer hangUp.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + l.Addr().String()
	_ = l.Close()

	tests := []struct {
		name, url, want string
	}{
		{"untrusted certificate", tlsSrv.URL, "does not trust the TLS certificate"},
		{"https to a plain-http port", strings.Replace(plain.URL, "http://", "https://", 1), "did not answer with TLS"},
		{"connection closed before the answer", hangUp.URL, "closed before an answer arrived"},
		{"connection refused", refused, "Cannot reach CloudWatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := call(t, tc.url)
			p := Explain(err, Context{})
			if p.Source != backend.ErrorSourceDownstream || p.Status != backend.StatusBadGateway || !strings.Contains(p.Message, tc.want) {
				t.Errorf("%v → %d %s %q, want 502 downstream containing %q", err, p.Status, p.Source, p.Message, tc.want)
			}
			for _, raw := range []string{"x509:", "tls:", "first record", "server gave HTTP response"} {
				if strings.Contains(p.Message, raw) {
					t.Errorf("message shows Go's raw text %q: %s", raw, p.Message)
				}
			}
		})
	}
}

func TestExplain(t *testing.T) {
	cw := Context{Endpoint: "https://monitoring.us-east-1.amazonaws.com", Region: "us-east-1", Action: "cloudwatch:ListMetrics"}
	tests := []struct {
		name       string
		err        error
		wantStatus backend.Status
		wantSource backend.ErrorSource
		want       []string
	}{
		{"403 access denied keeps its status", &promclient.APIError{Status: 403, Type: "AccessDeniedException", Message: "no", Cause: promclient.CauseAccessDenied},
			403, backend.ErrorSourceDownstream, []string{"Missing permission", "cloudwatch:ListMetrics", "HTTP 403 AccessDeniedException: no"}},
		{"403 wrapped by diagnosis still 403", fmt.Errorf("diagnosis: no rule could query the data source: %w", &promclient.APIError{Status: 403, Cause: promclient.CauseWrongRegion, Message: "m"}),
			403, backend.ErrorSourceDownstream, []string{"Wrong region", `"us-east-1"`, "diagnosis: no rule could query"}},
		{"error envelope in a 2xx", &promclient.APIError{Status: 200, Type: "execution", Message: "x"}, backend.StatusBadGateway, backend.ErrorSourceDownstream, []string{"CloudWatch reported execution: x"}},
		{"throttled", &promclient.APIError{Status: 429, Cause: promclient.CauseThrottledConcurrency, Throttled: true}, 429, backend.ErrorSourceDownstream, []string{"max concurrency"}},
		{"cut body", &promclient.BodyError{Status: 200, Cut: true, Bytes: 9, Err: errors.New("unexpected EOF"), Attempts: 4}, backend.StatusBadGateway, backend.ErrorSourceDownstream,
			[]string{"broke while the answer arrived", "cut off after 9 bytes", "after 4 attempts"}},
		{"malformed body", &promclient.BodyError{Status: 200, Err: promclient.Malformed("bad")}, backend.StatusBadGateway, backend.ErrorSourceDownstream, []string{"not a Prometheus API response"}},
		{"too many points", &promclient.TooLargeError{Limit: 5, Unit: "points"}, backend.StatusBadRequest, backend.ErrorSourceDownstream, []string{"more than 5 points", "raise the step"}},
		{"credentials", &awsauth.CredentialsError{Err: errors.New("no env")}, backend.StatusUnauthorized, backend.ErrorSourceDownstream, []string{"could not be resolved"}},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), backend.StatusTimeout, backend.ErrorSourceDownstream, []string{"did not answer in time", cw.Endpoint}},
		{"our own limiter, not a timeout", fmt.Errorf("x: %w", &promclient.LimitError{RequestsPerSecond: 20, MaxConcurrency: 10, Waited: time.Second}), backend.StatusTooManyRequests, backend.ErrorSourceDownstream,
			[]string{"the datasource's own request limiter (requestsPerSecond 20, maxConcurrency 10)", "raise requestsPerSecond or maxConcurrency"}},
		{"settings", backend.DownstreamErrorf("jsonData.x is bad"), backend.StatusBadRequest, backend.ErrorSourceDownstream, []string{"jsonData.x is bad"}},
		{"alarm permission", fmt.Errorf("alarms: %w", &awsapi.PermissionError{Action: "cloudwatch:DescribeAlarms", Err: &awsapi.Error{Action: "cloudwatch:DescribeAlarms", Status: 403, Code: "AccessDenied"}}),
			backend.StatusForbidden, backend.ErrorSourceDownstream, []string{"not allowed cloudwatch:DescribeAlarms", "IAM policy"}},
		{"inventory throttled", &awsapi.Error{Action: "sagemaker:ListEndpoints", Status: 400, Code: "ThrottlingException"}, backend.StatusTooManyRequests, backend.ErrorSourceDownstream,
			[]string{"sagemaker:ListEndpoints failed", "refresh dashboards less often"}},
		{"inventory signature refused", &awsapi.Error{Action: "sagemaker:ListEndpoints", Status: 403, Code: "SignatureDoesNotMatch"}, backend.StatusUnauthorized, backend.ErrorSourceDownstream,
			[]string{"refused the credentials"}},
		{"alarm call refused as invalid", &awsapi.Error{Action: "cloudwatch:DescribeAlarms", Status: 400, Code: "InvalidParameterValue", Message: "bad"}, backend.StatusBadRequest, backend.ErrorSourceDownstream,
			[]string{"InvalidParameterValue: bad"}},
		{"alarm answer unreadable", &awsapi.Error{Action: "cloudwatch:DescribeAlarms", Status: 200, Message: "the answer could not be read"}, backend.StatusBadGateway, backend.ErrorSourceDownstream,
			[]string{"no proxy rewrites answers"}},
		{"a plugin bug", errors.New("nil map"), backend.StatusInternal, backend.ErrorSourcePlugin, []string{"nil map"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Explain(tc.err, cw)
			if p.Status != tc.wantStatus || p.Source != tc.wantSource {
				t.Errorf("status %d source %s, want %d %s", p.Status, p.Source, tc.wantStatus, tc.wantSource)
			}
			for _, w := range tc.want {
				if !strings.Contains(p.Message, w) {
					t.Errorf("message %q lacks %q", p.Message, w)
				}
			}
		})
	}
}

// TestNamesWordTheFix: a caller's Names replace the datasource's words in every message
// that asks the user to change something.
func TestNamesWordTheFix(t *testing.T) {
	cli := Names{Region: "--region", Endpoint: "--url", Credentials: "--access-key", Identity: "the CLI's role", Timeout: "--timeout",
		Rate: "wait a minute", Concurrency: "run fewer rules", Machine: "this machine"}
	api := func(c promclient.Cause) error { return &promclient.APIError{Status: 403, Cause: c} }
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"wrong region", api(promclient.CauseWrongRegion), []string{`signed for "eu-west-1"`, "Set --region"}},
		{"unknown credentials", api(promclient.CauseUnknownCredentials), []string{"check --access-key"}},
		{"access denied", api(promclient.CauseAccessDenied), []string{"to the CLI's role"}},
		{"clock skew", api(promclient.CauseClockSkew), []string{"clock of this machine"}},
		{"rate", &promclient.APIError{Status: 429, Cause: promclient.CauseThrottledRate}, []string{"wait a minute"}},
		{"concurrency", &promclient.APIError{Status: 429, Cause: promclient.CauseThrottledConcurrency}, []string{"run fewer rules"}},
		{"deadline", context.DeadlineExceeded, []string{"raise --timeout", "from this machine"}},
		{"unreachable", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")}, []string{"check --url", "from this machine"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Explain(tc.err, Context{Region: "eu-west-1", Names: cli}).Message
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("message %q lacks %q", got, w)
				}
			}
			for _, ds := range []string{datasourceNames.Region, datasourceNames.Identity, datasourceNames.Timeout, datasourceNames.Machine, "datasource"} {
				if strings.Contains(got, ds) {
					t.Errorf("message %q names the datasource's %q", got, ds)
				}
			}
			if dflt := Explain(tc.err, Context{Region: "eu-west-1"}).Message; dflt == got {
				t.Errorf("the datasource's message is the CLI's: %q", dflt)
			}
		})
	}
}
