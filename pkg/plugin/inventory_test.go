package plugin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/sigv4"
)

func TestInventoryResources(t *testing.T) {
	secret := testSettings("").DecryptedSecureJSONData["secretKey"]
	tests := []struct {
		name       string
		call       resourceCall
		aws        func(*fakeAWS)
		wantStatus int
		want       string // the body, or a substring of an error body
		wantNoCall bool
	}{
		{name: "every endpoint, even those without GPU metrics", call: resourceCall{method: "GET", path: "inventory/endpoints"},
			wantStatus: 200, want: `{"values":["chat","embed","new-ep"]}`},
		{name: "every IC", call: resourceCall{method: "GET", path: "inventory/components"},
			wantStatus: 200, want: `{"values":["chat-llama","chat-qwen"]}`},
		{name: "ICs of the endpoints given", call: resourceCall{method: "GET", path: "inventory/components", query: "endpoint=embed,new-ep"},
			wantStatus: 200, want: `{"values":[]}`},
		{name: "ICs of chat", call: resourceCall{method: "GET", path: "/inventory/components/", query: "endpoint=chat"},
			wantStatus: 200, want: `{"values":["chat-llama","chat-qwen"]}`},
		{name: "All means any endpoint", call: resourceCall{method: "GET", path: "inventory/components", query: "endpoint=%24__all"},
			wantStatus: 200, want: `{"values":["chat-llama","chat-qwen"]}`},
		{name: "a bad endpoint name", call: resourceCall{method: "GET", path: "inventory/components", query: "endpoint=chat%7Cembed"},
			wantStatus: 400, want: "parameter endpoint: \\\"chat|embed\\\" is not a SageMaker name", wantNoCall: true},
		{name: "POST is refused", call: resourceCall{method: "POST", path: "inventory/endpoints"},
			wantStatus: 405, want: "use GET", wantNoCall: true},
		{name: "no ListEndpoints permission names the action", call: resourceCall{method: "GET", path: "inventory/endpoints"},
			aws: func(f *fakeAWS) {
				f.inventoryErr = &awsapi.PermissionError{Action: "sagemaker:ListEndpoints", Err: errors.New("AccessDeniedException for " + secret)}
			},
			wantStatus: 403, want: "not allowed sagemaker:ListEndpoints"},
		{name: "a panic is an internal error", call: resourceCall{method: "GET", path: "inventory/endpoints"},
			aws: func(f *fakeAWS) { f.panicIn = "Inventory" }, wantStatus: 500, want: "internal error while answering inventory/endpoints"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aws := fullFake()
			if tt.aws != nil {
				tt.aws(aws)
			}
			resp := callResource(t, newAWSDatasource(t, &fakeUpstream{}, aws), tt.call)
			body := string(resp.Body)
			if resp.Status != tt.wantStatus {
				t.Errorf("status %d, want %d (%s)", resp.Status, tt.wantStatus, body)
			}
			if tt.wantStatus == http.StatusOK && body != tt.want || !strings.Contains(body, tt.want) {
				t.Errorf("body %s\nwant %s", body, tt.want)
			}
			if strings.Contains(body, secret) {
				t.Errorf("body leaks the secret: %s", body)
			}
			if n := len(aws.Calls()); tt.wantNoCall && n > 0 {
				t.Errorf("%d AWS calls, want none", n)
			}
		})
	}
}

// TestCheckHealthOptionalAccess: after the unchanged PromQL checks, Save & test reads the
// alarms and the inventory once; what is missing is a warning naming the IAM action, never
// a failure, and a PromQL failure is reported without them.
func TestCheckHealthOptionalAccess(t *testing.T) {
	tests := []struct {
		name       string
		aws        func(*fakeAWS)
		cw         *fakeCloudWatch
		wantStatus backend.HealthStatus
		want       []string
		wantNot    []string
		wantCalls  int
	}{
		{name: "both readable", wantStatus: backend.HealthStatusOk,
			want: []string{"Connected to CloudWatch", "Read 5 CloudWatch alarms and 3 SageMaker endpoints."}, wantNot: []string{"Warning"}, wantCalls: 2},
		{name: "no DescribeAlarms", aws: func(f *fakeAWS) { f.alarmsErr = denied("cloudwatch:DescribeAlarms") }, wantStatus: backend.HealthStatusOk,
			want: []string{"Read 3 SageMaker endpoints.", "Warning: the data source's credentials are not allowed cloudwatch:DescribeAlarms", "optional"}, wantCalls: 2},
		{name: "no ListEndpoints", aws: func(f *fakeAWS) { f.inventoryErr = denied("sagemaker:ListEndpoints") }, wantStatus: backend.HealthStatusOk,
			want: []string{"Read 5 CloudWatch alarms.", "not allowed sagemaker:ListEndpoints", "inventory query"}, wantCalls: 2},
		{name: "neither", aws: func(f *fakeAWS) {
			f.alarmsErr, f.inventoryErr = denied("cloudwatch:DescribeAlarms"), denied("sagemaker:DescribeEndpoint")
		}, wantStatus: backend.HealthStatusOk,
			want: []string{"not allowed cloudwatch:DescribeAlarms", "not allowed sagemaker:DescribeEndpoint"}, wantNot: []string{"Read "}, wantCalls: 2},
		{name: "SageMaker failing otherwise", aws: func(f *fakeAWS) {
			f.inventoryErr = errors.New("operation error SageMaker: ListEndpoints, StatusCode: 503")
		},
			wantStatus: backend.HealthStatusOk, want: []string{"Warning: the sagemaker:ListEndpoints check failed", "StatusCode: 503"}, wantCalls: 2},
		{name: "a panic is a warning too", aws: func(f *fakeAWS) { f.panicIn = "Alarms" },
			wantStatus: backend.HealthStatusOk, want: []string{"Warning: the cloudwatch:DescribeAlarms check failed", "panic"}, wantCalls: 2},
		{name: "PromQL failing: no optional checks", cw: &fakeCloudWatch{region: "us-east-1", queryStatus: 500},
			wantStatus: backend.HealthStatusError, want: []string{"HTTP 500"}, wantNot: []string{"alarms"}, wantCalls: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cw := tt.cw
			if cw == nil {
				cw = &fakeCloudWatch{region: "us-east-1", series: `[{"__name__":"DCGM_FI_DEV_GPU_UTIL"}]`, vendedSeries: `[{"__name__":"Invocations"}]`}
			}
			cw.start(t)
			aws := fullFake()
			if tt.aws != nil {
				tt.aws(aws)
			}
			d, err := New(context.Background(), cw.settings("us-east-1", fakeAccessKey, fakeSecretKey), NewClient,
				WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, sigv4.SecretSink) (awsapi.API, error) {
					return aws, nil
				}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Dispose)
			res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v: %s", res.Status, res.Message)
			if res.Status != tt.wantStatus {
				t.Errorf("status %v, want %v", res.Status, tt.wantStatus)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Message, w) {
					t.Errorf("message lacks %q", w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(res.Message, w) {
					t.Errorf("message has %q", w)
				}
			}
			if n := len(aws.Calls()); n != tt.wantCalls {
				t.Errorf("%d AWS calls (%v), want %d", n, aws.Calls(), tt.wantCalls)
			}
		})
	}
}

// TestAWSClientThatCannotBeBuilt: PromQL keeps working; Save & test warns, the queries and
// the variables say why.
func TestAWSClientThatCannotBeBuilt(t *testing.T) {
	cw := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	d, err := New(context.Background(), cw.settings("us-east-1", fakeAccessKey, fakeSecretKey), NewClient,
		WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, sigv4.SecretSink) (awsapi.API, error) {
			return nil, backend.DownstreamErrorf("the SageMaker host cannot be derived from this endpoint")
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Dispose)
	res, _ := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "Warning: alarms and inventory are unavailable: the SageMaker host cannot be derived") {
		t.Errorf("%v: %s", res.Status, res.Message)
	}
	dr := runOne(t, d, "inventory", `{}`)
	if dr.Error == nil || !strings.Contains(dr.Error.Error(), "the SageMaker host cannot be derived") || dr.ErrorSource != backend.ErrorSourceDownstream {
		t.Errorf("query: %v (%s)", dr.Error, dr.ErrorSource)
	}
	if resp := callResource(t, d, resourceCall{method: "GET", path: "inventory/endpoints"}); resp.Status != http.StatusBadRequest {
		t.Errorf("resource: %d %s", resp.Status, resp.Body)
	}
}

// TestProductionAWSClientAgainstAPromQLOnlyEndpoint: a new data source pointed at an endpoint
// that speaks only the PromQL API (as before alarms existed): Save & test passes with a
// warning for each optional action, and an alarms query fails with a downstream error.
func TestProductionAWSClientAgainstAPromQLOnlyEndpoint(t *testing.T) {
	cw := (&fakeCloudWatch{region: "us-east-1", series: `[{"__name__":"DCGM_FI_DEV_GPU_UTIL"}]`, vendedSeries: `[{"__name__":"Invocations"}]`}).start(t)
	d := newRealDatasource(t, context.Background(), cw.settings("us-east-1", fakeAccessKey, fakeSecretKey))
	if d.aws == nil {
		t.Fatalf("the production AWS client was not built: %v", d.awsSetupErr)
	}
	res, _ := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	t.Log(res.Message)
	for _, w := range []string{"SageMaker metrics are present", "Warning", "cloudwatch:DescribeAlarms", "sagemaker:ListEndpoints"} {
		if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, w) {
			t.Errorf("%v: message lacks %q", res.Status, w)
		}
	}
	if strings.Contains(res.Message, fakeSecretKey) {
		t.Error("the message leaks the secret key")
	}
	dr := runOne(t, d, "alarms", `{}`)
	if dr.Error == nil || dr.ErrorSource != backend.ErrorSourceDownstream {
		t.Errorf("alarms query: %v (%s)", dr.Error, dr.ErrorSource)
	}
}

// closingAWS is an awsapi.API holding connections, like the production client.
type closingAWS struct {
	*fakeAWS
	closed int
}

func (c *closingAWS) CloseIdleConnections() { c.closed++ }

func TestDisposeClosesTheAWSClientsConnections(t *testing.T) {
	aws := &closingAWS{fakeAWS: fullFake()}
	d, err := New(context.Background(), testSettings(""),
		func(context.Context, *models.Settings, awsauth.Endpoint, sigv4.SecretSink) (Upstream, error) {
			return &fakeUpstream{}, nil
		},
		WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, sigv4.SecretSink) (awsapi.API, error) {
			return aws, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	d.Dispose()
	if aws.closed != 1 {
		t.Errorf("CloseIdleConnections called %d times, want 1", aws.closed)
	}
}
