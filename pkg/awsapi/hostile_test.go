package awsapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	aas "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/encoding/cbor"
	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
)

// validAlarms is a well-formed DescribeAlarms answer, cut or padded by the cases below.
func validAlarms(n int) []byte {
	var list cbor.List
	for i := range n {
		list = append(list, cbor.Map{"AlarmName": cs(fmt.Sprintf("alarm-%04d", i)), "StateValue": cs("OK"), "StateReason": cs(strings.Repeat("r", 100))})
	}
	return cbor.Encode(cbor.Map{"MetricAlarms": list})
}

func TestHostileUpstream(t *testing.T) {
	deep := append(bytes.Repeat([]byte{0x81}, 100_000), 0x00) // a list in a list in a list …
	// Each answer is an *Error of the call with the answer's status; unread says why the
	// body was not read: "size" (over the limit), "decode" (not the protocol's format).
	for _, tc := range []struct {
		name   string
		cw     *reply // DescribeAlarms answer; else ListEndpoints gets sm
		sm     *reply
		limit  int64
		status int
		unread string
	}{
		{name: "CloudWatch HTML instead of CBOR", cw: &reply{raw: []byte("<html><body>proxy login</body></html>")}, status: 200, unread: "decode"},
		{name: "CloudWatch truncated CBOR", cw: &reply{raw: validAlarms(3)[:40]}, status: 200, unread: "decode"},
		{name: "CloudWatch deeply nested CBOR", cw: &reply{raw: deep}, status: 200, unread: "decode"},
		{name: "CloudWatch wrong field types", cw: &reply{body: cbor.Map{"MetricAlarms": cs("not a list"), "NextToken": cbor.Uint(7)}}, status: 200, unread: "decode"},
		{name: "CloudWatch huge answer", cw: &reply{raw: validAlarms(50)}, limit: 1024, status: 200, unread: "size"},
		{name: "SageMaker garbage", sm: &reply{raw: []byte("\x00\xff{{{")}, status: 200, unread: "decode"},
		{name: "SageMaker truncated JSON", sm: &reply{raw: []byte(`{"Endpoints":[{"EndpointName":"a`)}, status: 200, unread: "decode"},
		{name: "SageMaker huge answer", sm: &reply{raw: []byte(`{"Endpoints":[],"x":"` + strings.Repeat("a", 4096) + `"}`)}, limit: 1024, status: 200, unread: "size"},
		{name: "SageMaker error of unknown shape", sm: &reply{status: 400, raw: []byte("[1,2,3]")}, status: 400, unread: "decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, testRegion)
			if tc.cw != nil {
				f.cw["DescribeAlarms"] = func(cbor.Map) reply { return *tc.cw }
			}
			if tc.sm != nil {
				f.sm["ListEndpoints"] = func(map[string]any) reply { return *tc.sm }
			}
			c, _ := newTestClient(t, f, options{maxAnswerBytes: tc.limit})
			var err error
			if tc.cw != nil {
				_, err = c.Alarms(context.Background(), AlarmQuery{})
			} else {
				_, err = c.Inventory(context.Background())
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			action := ActionListEndpoints
			if tc.cw != nil {
				action = ActionDescribeAlarms
			}
			if e.Action != action || e.Status != tc.status || unreadBecause(err) != tc.unread {
				t.Errorf("%s HTTP %d unread %q (%v), want %s HTTP %d unread %q", e.Action, e.Status, unreadBecause(err), err, action, tc.status, tc.unread)
			}
		})
	}
}

// unreadBecause is why an answer's body was not read: "size", "decode" or "".
func unreadBecause(err error) string {
	var (
		tooLarge *tooLargeError
		deser    *smithy.DeserializationError
	)
	switch {
	case errors.As(err, &tooLarge):
		return "size"
	case errors.As(err, &deser):
		return "decode"
	}
	return ""
}

func TestHugeAnswerWithoutContentLength(t *testing.T) {
	body := validAlarms(50)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		w.Header().Set("Content-Type", "application/cbor")
		for chunk := range slices.Chunk(body, 256) {
			w.Write(chunk)
			w.(http.Flusher).Flush() // chunked: the size is known only while reading
		}
	}))
	defer srv.Close()
	c, _ := clientFor(t, testSettings(srv.URL, testRegion), options{maxAnswerBytes: 1024})
	_, err := c.Alarms(context.Background(), AlarmQuery{})
	if unreadBecause(err) != "size" {
		t.Errorf("error %v, want the answer refused for its size", err)
	}
}

func TestBodyLimitEdge(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantErr bool
	}{{size: 1023}, {size: 1024}, {size: 1025, wantErr: true}} {
		body := &limitedBody{ReadCloser: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size))), left: 1024, limit: 1024}
		got, err := io.ReadAll(body)
		if (err != nil) != tc.wantErr || (!tc.wantErr && len(got) != tc.size) {
			t.Errorf("%d bytes: read %d, err %v; want error %v", tc.size, len(got), err, tc.wantErr)
		}
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	f := newFake(t, testRegion)
	redirect := func() reply {
		return reply{status: http.StatusTemporaryRedirect, raw: []byte{}, header: map[string]string{"Location": other.URL + "/steal"}}
	}
	f.cw["DescribeAlarms"] = func(cbor.Map) reply { return redirect() }
	f.sm["ListEndpoints"] = func(map[string]any) reply { return redirect() }
	c, _ := newTestClient(t, f, options{})

	_, cwErr := c.Alarms(context.Background(), AlarmQuery{})
	_, smErr := c.Inventory(context.Background())
	for _, err := range []error{cwErr, smErr} {
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusTemporaryRedirect || e.Message != "redirect to "+other.URL {
			t.Fatalf("error %v, want the redirect named and refused", err)
		}
		if !strings.Contains(err.Error(), "check the endpoint URL (jsonData.endpoint)") {
			t.Errorf("message %q does not name the fix", err)
		}
	}
	if elsewhere.Load() != 0 {
		t.Errorf("%d requests reached the redirect's host", elsewhere.Load())
	}
}

func TestEndlessPagination(t *testing.T) {
	f := newFake(t, testRegion)
	var n atomic.Int32
	f.cw["DescribeAlarms"] = func(cbor.Map) reply {
		return reply{body: cbor.Map{"MetricAlarms": cbor.List{}, "NextToken": cs(fmt.Sprint("t", n.Add(1)))}}
	}
	f.cw["DescribeAlarmContributors"] = func(cbor.Map) reply {
		return reply{body: cbor.Map{"AlarmContributors": cbor.List{}, "NextToken": cs("same")}}
	}
	c, _ := newTestClient(t, f, options{})
	if _, err := c.Alarms(context.Background(), AlarmQuery{}); !errors.Is(err, errPageBound) {
		t.Errorf("ever-new tokens: error %v, want the page bound named", err)
	}
	if int(n.Load()) != maxPages {
		t.Errorf("%d pages fetched, want the bound %d", n.Load(), maxPages)
	}
	got, err := c.Contributors(context.Background(), "a")
	if err != nil || got != nil || f.count("CloudWatch.DescribeAlarmContributors") != 2 {
		t.Errorf("a repeated token: %v, %v after %d calls; want the listing ended after the repeat", got, err, f.count("CloudWatch.DescribeAlarmContributors"))
	}
}

func TestRegionHosts(t *testing.T) {
	for _, tc := range []struct {
		region   string
		endpoint string
		want     []string
	}{
		{region: "us-east-1", want: []string{"monitoring.us-east-1.amazonaws.com", "api.sagemaker.us-east-1.amazonaws.com", "application-autoscaling.us-east-1.amazonaws.com"}},
		{region: "cn-north-1", want: []string{"monitoring.cn-north-1.amazonaws.com.cn", "api.sagemaker.cn-north-1.amazonaws.com.cn", "application-autoscaling.cn-north-1.amazonaws.com.cn"}},
		{region: "eu-west-1", endpoint: "https://monitoring.eu-west-1.amazonaws.com", want: []string{"monitoring.eu-west-1.amazonaws.com", "api.sagemaker.eu-west-1.amazonaws.com", "application-autoscaling.eu-west-1.amazonaws.com"}},
		{region: "us-west-2", endpoint: "https://aws-proxy.internal.example", want: []string{"aws-proxy.internal.example"}},
	} {
		t.Run(tc.region, func(t *testing.T) {
			f := newFake(t, tc.region)
			f.cw["DescribeAlarms"] = func(cbor.Map) reply { return reply{body: cbor.Map{}} }
			f.sm["ListEndpoints"] = func(map[string]any) reply { return reply{body: map[string]any{}} }
			f.sm["ListInferenceComponents"] = func(map[string]any) reply { return reply{body: map[string]any{}} }
			for _, op := range []string{"DescribeScalableTargets", "DescribeScalingPolicies"} {
				f.aas[op] = func(map[string]any) reply { return reply{body: map[string]any{}} }
			}
			c, _ := clientFor(t, testSettings(tc.endpoint, tc.region), options{base: inMemory{f}})
			if _, err := c.Alarms(context.Background(), AlarmQuery{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Inventory(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ScalingTargets(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(f.hosts) != len(tc.want) {
				t.Errorf("hosts %v, want %v", f.hosts, tc.want)
			}
			for _, h := range tc.want {
				if !f.hosts[h] {
					t.Errorf("hosts %v, want %v", f.hosts, tc.want)
				}
			}
		})
	}
}

func TestNothingElseIsSigned(t *testing.T) {
	c, _ := clientFor(t, testSettings("", testRegion), options{base: refuseAll{t}})
	// An endpoint override (as a stray option or a resolver change would make) is refused
	// before the SDK signs, and nothing reaches the transport.
	_, err := c.sm.ListEndpoints(context.Background(), &sagemaker.ListEndpointsInput{}, func(o *sagemaker.Options) {
		o.BaseEndpoint = aws.String("https://evil.example.com")
	})
	if err == nil || !strings.Contains(err.Error(), "refusing to sign a request for https://evil.example.com") {
		t.Errorf("error %v, want the foreign host refused", err)
	}
	_, err = c.aas.DescribeScalableTargets(context.Background(), &aas.DescribeScalableTargetsInput{ServiceNamespace: "sagemaker"}, func(o *aas.Options) {
		o.BaseEndpoint = aws.String("https://evil.example.com")
	})
	if err == nil || !strings.Contains(err.Error(), "refusing to sign a request for https://evil.example.com") {
		t.Errorf("Application Auto Scaling: error %v, want the foreign host refused", err)
	}
	// The transport refuses too, for anything not going through the SDK's pipeline.
	hc := httpClient(refuseAll{t}, mustEndpoint(t, testRegion), 1024)
	req, _ := http.NewRequest(http.MethodPost, "https://api.sagemaker.us-east-1.amazonaws.com.evil.example/", nil)
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
		t.Error("the transport sent a request for a foreign host")
	}
}

func TestCredentialsAreReportedAndFailuresWorded(t *testing.T) {
	sink := &secrets{}
	for _, tc := range []struct {
		name    string
		p       aws.CredentialsProvider
		wantErr bool
	}{
		{name: "ok", p: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDROTATED000000001", SecretAccessKey: "rotated-secret", SessionToken: "rotated-token"}, nil
		})},
		{name: "failing", p: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return aws.Credentials{}, errors.New("no IMDS") }), wantErr: true},
		{name: "empty", p: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return aws.Credentials{}, nil }), wantErr: true},
	} {
		_, err := (&sinkingCredentials{next: tc.p, sink: sink}).Retrieve(context.Background())
		var ce *awsauth.CredentialsError
		if tc.wantErr != errors.As(err, &ce) {
			t.Errorf("%s: error %v, want CredentialsError %v", tc.name, err, tc.wantErr)
		}
	}
	if !sink.has("rotated-secret") || !sink.has("rotated-token") {
		t.Error("the sink did not learn the credentials used")
	}
}

func mustEndpoint(t *testing.T, region string) awsauth.Endpoint {
	t.Helper()
	ep, err := awsauth.ResolveEndpoint(awsauth.Settings{Region: region})
	if err != nil {
		t.Fatal(err)
	}
	return awsauth.SageMakerEndpoint(ep)
}

func TestCustomEndpointWithPath(t *testing.T) {
	f := newFake(t, testRegion)
	f.prefix = "/aws"
	f.cw["DescribeAlarms"] = func(cbor.Map) reply { return reply{body: cbor.Map{}} }
	f.sm["ListEndpoints"] = func(map[string]any) reply { return reply{body: map[string]any{}} }
	f.sm["ListInferenceComponents"] = func(map[string]any) reply { return reply{body: map[string]any{}} }
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, _ := clientFor(t, testSettings(srv.URL+"/aws/", testRegion), options{})
	if _, err := c.Alarms(context.Background(), AlarmQuery{}); err != nil {
		t.Error(err)
	}
	if _, err := c.Inventory(context.Background()); err != nil {
		t.Error(err)
	}
	if f.count("CloudWatch.DescribeAlarms") != 1 || f.count("SageMaker.ListEndpoints") != 1 {
		t.Errorf("calls %v, want one of each", f.calls)
	}
}

func TestNoAnswerKeepsTheTransportError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, _ := clientFor(t, testSettings("http://"+addr, testRegion), options{})
	_, err = c.Alarms(context.Background(), AlarmQuery{})
	var op *net.OpError
	if !errors.As(err, &op) || !backend.IsDownstreamError(err) || !strings.Contains(fmt.Sprint(err), ActionDescribeAlarms) {
		t.Errorf("error %v, want the network error kept (for fault.Explain), downstream, naming the action", err)
	}
}
