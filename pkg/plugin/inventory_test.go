package plugin

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
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
		{name: "no IC permission: the endpoints still", call: resourceCall{method: "GET", path: "inventory/endpoints"},
			aws: withoutICs, wantStatus: 200, want: `{"values":["chat","embed","new-ep"]}`},
		{name: "no IC permission: the ICs name the action", call: resourceCall{method: "GET", path: "inventory/components"},
			aws: withoutICs, wantStatus: 403, want: "not allowed sagemaker:ListInferenceComponents"},
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

// withoutICs is the inventory as awsapi returns it without sagemaker:ListInferenceComponents.
func withoutICs(f *fakeAWS) {
	for i := range f.inventory.Endpoints {
		f.inventory.Endpoints[i].Components = nil
	}
	f.inventory.ComponentsErr = denied(awsapi.ActionListInferenceComponents)
}

// TestInventoryWithoutICPermission: the queries that read the inventory still show the
// endpoints and variants, with a warning naming the missing action.
func TestInventoryWithoutICPermission(t *testing.T) {
	for _, tc := range []struct {
		queryType, model string
		want             []string // values of the frame's first string field
	}{
		{"inventory", `{}`, []string{"variant", "variant", "variant"}},
		{"inventory", `{"format":"annotations"}`, nil},
		{"alarms", `{}`, nil},
		{"alarmHistory", `{}`, nil},
	} {
		t.Run(tc.queryType+tc.model, func(t *testing.T) {
			aws := fullFake()
			withoutICs(aws)
			dr := runOne(t, newAWSDatasource(t, &fakeUpstream{}, aws), tc.queryType, tc.model)
			if dr.Error != nil || len(dr.Frames) != 1 {
				t.Fatalf("error %v, %d frames", dr.Error, len(dr.Frames))
			}
			fr := dr.Frames[0]
			var warned bool
			if fr.Meta != nil {
				for _, n := range fr.Meta.Notices {
					warned = warned || n.Severity == data.NoticeSeverityWarning && strings.Contains(n.Text, "not allowed sagemaker:ListInferenceComponents") &&
						strings.Contains(n.Text, "inference components could not be read")
				}
			}
			if !warned {
				t.Errorf("no warning naming sagemaker:ListInferenceComponents: %+v", fr.Meta)
			}
			if tc.want != nil {
				var kinds []string
				for i := range fr.Rows() {
					kinds = append(kinds, fr.Fields[0].At(i).(string))
				}
				if !slices.Equal(kinds, tc.want) {
					t.Errorf("kinds %v, want %v (the variants of the three endpoints)", kinds, tc.want)
				}
			}
		})
	}
	dr := runOne(t, newAWSDatasource(t, &fakeUpstream{}, fullFake()), "inventory", `{}`)
	if dr.Error != nil || dr.Frames[0].Meta != nil && len(dr.Frames[0].Meta.Notices) > 0 {
		t.Errorf("with every permission: error %v, meta %+v", dr.Error, dr.Frames[0].Meta)
	}
}

// fakePrices is a Price List client that lists nothing and probes with err.
type fakePrices struct {
	err    error
	probes atomic.Int32
}

func (f *fakePrices) Prices(context.Context, string) ([]pricing.Price, error) { return nil, f.err }
func (f *fakePrices) ProbePrices(context.Context) error {
	f.probes.Add(1)
	return f.err
}

// fakeChanges is a CloudTrail client answering list (or err) and its probe err.
type fakeChanges struct {
	list   []changes.Change
	err    error
	probes atomic.Int32
}

func (f *fakeChanges) Changes(context.Context, awsapi.ChangeQuery) (awsapi.ChangeList, error) {
	return awsapi.ChangeList{Changes: f.list}, f.err
}

func (f *fakeChanges) ProbeChanges(context.Context) error {
	f.probes.Add(1)
	return f.err
}

// TestCheckHealthOptionalAccess: after the unchanged PromQL checks, Save & test probes the
// alarms, the inventory and the list prices with one cheap call each (never the full
// reads); what is missing is a warning naming the IAM action, never a failure, and a PromQL
// failure is reported without them.
func TestCheckHealthOptionalAccess(t *testing.T) {
	probes := []string{"ProbeAlarms", "ProbeInventory", "ProbeScaling"}
	tests := []struct {
		name       string
		pricesErr  error
		changesErr error
		aws        func(*fakeAWS)
		cw         *fakeCloudWatch
		wantStatus backend.HealthStatus
		want       []string
		wantNot    []string
		wantCalls  []string
	}{
		{name: "both readable", wantStatus: backend.HealthStatusOk,
			want: []string{"Connected to CloudWatch", "Can read CloudWatch alarms and SageMaker endpoints and autoscaling policies and AWS list prices and CloudTrail changes."}, wantNot: []string{"Warning"}, wantCalls: probes},
		{name: "no GetProducts", pricesErr: denied("pricing:GetProducts"), wantStatus: backend.HealthStatusOk,
			want: []string{"Can read CloudWatch alarms and SageMaker endpoints and autoscaling policies and CloudTrail changes.", "Warning: the data source's credentials are not allowed pricing:GetProducts", "cost panels' list prices"}, wantCalls: probes},
		{name: "no DescribeAlarms", aws: func(f *fakeAWS) { f.alarmsErr = denied("cloudwatch:DescribeAlarms") }, wantStatus: backend.HealthStatusOk,
			want: []string{"Can read SageMaker endpoints and autoscaling policies and AWS list prices and CloudTrail changes.", "Warning: the data source's credentials are not allowed cloudwatch:DescribeAlarms", "optional"}, wantCalls: probes},
		{name: "no ListEndpoints", aws: func(f *fakeAWS) { f.inventoryErr = denied("sagemaker:ListEndpoints") }, wantStatus: backend.HealthStatusOk,
			want: []string{"Can read CloudWatch alarms and autoscaling policies and AWS list prices and CloudTrail changes.", "not allowed sagemaker:ListEndpoints", "inventory query"}, wantCalls: probes},
		{name: "neither", aws: func(f *fakeAWS) {
			f.alarmsErr, f.inventoryErr = denied("cloudwatch:DescribeAlarms"), denied("sagemaker:ListEndpoints")
		}, wantStatus: backend.HealthStatusOk,
			want: []string{"not allowed cloudwatch:DescribeAlarms", "not allowed sagemaker:ListEndpoints", "Can read autoscaling policies and AWS list prices and CloudTrail changes."}, wantNot: []string{"Can read CloudWatch", "Can read SageMaker"}, wantCalls: probes},
		{name: "no autoscaling policies", aws: func(f *fakeAWS) { f.scalingErr = denied("application-autoscaling:DescribeScalingPolicies") }, wantStatus: backend.HealthStatusOk,
			want: []string{"Can read CloudWatch alarms and SageMaker endpoints and AWS list prices and CloudTrail changes.", "not allowed application-autoscaling:DescribeScalingPolicies", "2× its usual load"}, wantCalls: probes},
		{name: "no LookupEvents", changesErr: denied("cloudtrail:LookupEvents"), wantStatus: backend.HealthStatusOk,
			want: []string{"Can read CloudWatch alarms and SageMaker endpoints and autoscaling policies and AWS list prices.", "not allowed cloudtrail:LookupEvents", "tying an incident to the deployment"}, wantCalls: probes},
		{name: "SageMaker failing otherwise", aws: func(f *fakeAWS) {
			f.inventoryErr = errors.New("operation error SageMaker: ListEndpoints, StatusCode: 503")
		},
			wantStatus: backend.HealthStatusOk, want: []string{"Warning: the sagemaker:ListEndpoints check failed", "StatusCode: 503"}, wantCalls: probes},
		{name: "a panic is a warning too", aws: func(f *fakeAWS) { f.panicIn = "ProbeAlarms" },
			wantStatus: backend.HealthStatusOk, want: []string{"Warning: the cloudwatch:DescribeAlarms check failed", "panic"}, wantCalls: probes},
		{name: "PromQL failing: no optional checks", cw: &fakeCloudWatch{region: "us-east-1", queryStatus: 500},
			wantStatus: backend.HealthStatusError, want: []string{"HTTP 500"}, wantNot: []string{"alarms"}},
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
			prices, changes := &fakePrices{err: tt.pricesErr}, &fakeChanges{err: tt.changesErr}
			d, err := New(context.Background(), cw.settings("us-east-1", fakeAccessKey, fakeSecretKey), NewClient,
				WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (awsapi.API, error) {
					return aws, nil
				}),
				WithPrices(func(*models.Settings, awsauth.Endpoint, Shared) (awsapi.PriceLister, error) { return prices, nil }),
				WithChanges(func(*models.Settings, awsauth.Endpoint, Shared) (awsapi.ChangeLister, error) { return changes, nil }))
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
			calls := aws.Calls()
			slices.Sort(calls)
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("AWS calls %v, want %v", calls, tt.wantCalls)
			}
			want := int32(0) // the optional checks run once PromQL works
			if tt.wantCalls != nil {
				want = 1
			}
			if changes.probes.Load() != want {
				t.Errorf("%d LookupEvents probes, want %d", changes.probes.Load(), want)
			}
			if prices.probes.Load() != want {
				t.Errorf("%d GetProducts probes, want %d", prices.probes.Load(), want)
			}
		})
	}
}

// TestAWSClientThatCannotBeBuilt: PromQL keeps working; Save & test warns, the queries and
// the variables say why.
func TestAWSClientThatCannotBeBuilt(t *testing.T) {
	cw := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	d, err := New(context.Background(), cw.settings("us-east-1", fakeAccessKey, fakeSecretKey), NewClient,
		WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (awsapi.API, error) {
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
// that speaks only the PromQL API (no alarms or SageMaker API): Save & test passes with a
// warning for each optional action, and an alarms query fails with a downstream error.
func TestProductionAWSClientAgainstAPromQLOnlyEndpoint(t *testing.T) {
	cw := (&fakeCloudWatch{region: "us-east-1", series: `[{"__name__":"DCGM_FI_DEV_GPU_UTIL"}]`, vendedSeries: `[{"__name__":"Invocations"}]`}).start(t)
	d := newRealDatasource(t, context.Background(), cw.settings("us-east-1", fakeAccessKey, fakeSecretKey))
	if d.home.aws == nil {
		t.Fatalf("the production AWS client was not built: %v", d.home.awsErr)
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
		func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
			return &fakeUpstream{}, nil
		},
		WithAWS(func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (awsapi.API, error) {
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
