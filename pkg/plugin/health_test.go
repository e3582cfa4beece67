package plugin

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

func TestCheckHealth(t *testing.T) {
	const region = "us-east-1"
	tests := []struct {
		name       string
		server     *fakeCloudWatch
		settings   func(f *fakeCloudWatch) backend.DataSourceInstanceSettings
		ctx        context.Context
		wantStatus backend.HealthStatus
		want       []string // substrings of the message
		wantNoCall bool
	}{
		{
			name: "healthy with SageMaker metrics",
			server: &fakeCloudWatch{region: region, series: `[{"__name__":"DCGM_FI_DEV_GPU_UTIL","@resource.host.id":"i-1"}]`,
				vendedSeries: `[{"__name__":"Invocations","EndpointName":"ep"}]`},
			wantStatus: backend.HealthStatusOk,
			want:       []string{"SageMaker metrics are present"},
		},
		{
			name:       "native metrics without enriched vended metrics: OTel enrichment is off",
			server:     &fakeCloudWatch{region: region, series: `[{"__name__":"DCGM_FI_DEV_GPU_UTIL","@resource.host.id":"i-1"}]`},
			wantStatus: backend.HealthStatusOk,
			want:       []string{"no enriched vended metrics", "OTel metric enrichment", "start-otel-enrichment", "Invocations", "No vended metrics"},
		},
		{
			name:       "healthy but no SageMaker metrics yet",
			server:     &fakeCloudWatch{region: region},
			wantStatus: backend.HealthStatusOk,
			want:       []string{"no SageMaker metrics", "detailed observability", "OTel enrichment", "DCGM_FI_DEV_GPU_UTIL", "vllm:num_requests_running"},
		},
		{
			name:       "CloudWatch refusing the selector-free 1+1 still proves signature and permission",
			server:     &fakeCloudWatch{region: region, queryStatus: 400},
			wantStatus: backend.HealthStatusOk,
			want:       []string{"Connected to CloudWatch"},
		},
		{
			name:       "CloudWatch failing inside",
			server:     &fakeCloudWatch{region: region, queryStatus: 500},
			wantStatus: backend.HealthStatusError,
			want:       []string{"HTTP 500", "cloudwatch:GetMetricData probe"},
		},
		{
			name:   "wrong region",
			server: &fakeCloudWatch{region: "eu-west-1"},
			// A custom endpoint cannot tell its region, so the mismatch reaches CloudWatch.
			wantStatus: backend.HealthStatusError,
			want:       []string{"Wrong region", "Default Region", "Credential should be scoped to a valid region", "HTTP 403 InvalidSignatureException"},
		},
		{
			name:       "wrong service scope",
			server:     &fakeCloudWatch{region: region, service: "aps"},
			wantStatus: backend.HealthStatusError,
			want:       []string{"Wrong service scope", "monitoring", "not an Amazon Managed Prometheus workspace"},
		},
		{
			name:       "clock skew",
			server:     &fakeCloudWatch{region: region, clockOffset: 20 * time.Minute},
			wantStatus: backend.HealthStatusError,
			want:       []string{"Clock skew", "NTP", "Signature expired"},
		},
		{
			name:   "unknown access key",
			server: &fakeCloudWatch{region: region},
			settings: func(f *fakeCloudWatch) backend.DataSourceInstanceSettings {
				return f.settings(region, "AKIDNOBODYKNOWS", fakeSecretKey)
			},
			wantStatus: backend.HealthStatusError,
			want:       []string{"does not recognise these credentials", "access key"},
		},
		{
			name:   "wrong secret key",
			server: &fakeCloudWatch{region: region},
			settings: func(f *fakeCloudWatch) backend.DataSourceInstanceSettings {
				return f.settings(region, fakeAccessKey, "not-the-right-secret-key")
			},
			wantStatus: backend.HealthStatusError,
			want:       []string{"signature does not match", "secret key"},
		},
		{
			name:       "missing GetMetricData",
			server:     &fakeCloudWatch{region: region, denied: map[string]string{"/api/v1/query": "cloudwatch:GetMetricData"}},
			wantStatus: backend.HealthStatusError,
			want:       []string{"Missing permission", "may not call cloudwatch:GetMetricData", "cloudwatch:ListMetrics"},
		},
		{
			name:       "missing ListMetrics",
			server:     &fakeCloudWatch{region: region, denied: map[string]string{"/api/v1/labels": "cloudwatch:ListMetrics"}},
			wantStatus: backend.HealthStatusError,
			want:       []string{"Missing permission", "may not call cloudwatch:ListMetrics"},
		},
		{
			name:   "endpoint unreachable",
			server: &fakeCloudWatch{region: region},
			settings: func(f *fakeCloudWatch) backend.DataSourceInstanceSettings {
				f.url = closedLoopbackURL(t)
				return f.settings(region, fakeAccessKey, fakeSecretKey)
			},
			wantStatus: backend.HealthStatusError,
			want:       []string{"Cannot reach", "check the endpoint URL"},
		},
		{
			name:   "endpoint not allowed",
			server: &fakeCloudWatch{region: region},
			settings: func(f *fakeCloudWatch) backend.DataSourceInstanceSettings {
				f.url = "http://10.1.2.3:9090"
				return f.settings(region, fakeAccessKey, fakeSecretKey)
			},
			wantStatus: backend.HealthStatusError,
			want:       []string{"jsonData.endpoint", "plain http"},
			wantNoCall: true,
		},
		{
			name:   "auth type not allowed by Grafana",
			server: &fakeCloudWatch{region: region},
			ctx: backend.WithGrafanaConfig(context.Background(), backend.NewGrafanaCfg(map[string]string{
				"AWS_AUTH_AllowedAuthProviders": "default,ec2_iam_role",
			})),
			wantStatus: backend.HealthStatusError,
			want:       []string{`"keys" is not allowed`, "allowed_auth_providers"},
			wantNoCall: true,
		},
		{
			name:   "invalid settings",
			server: &fakeCloudWatch{region: region},
			settings: func(f *fakeCloudWatch) backend.DataSourceInstanceSettings {
				s := f.settings(region, fakeAccessKey, fakeSecretKey)
				s.JSONData = []byte(`{"authType":"magic","endpoint":"` + f.url + `"}`)
				return s
			},
			wantStatus: backend.HealthStatusError,
			want:       []string{`jsonData.authType "magic"`},
			wantNoCall: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := tt.server
			f.start(t)
			s := f.settings(region, fakeAccessKey, fakeSecretKey)
			if tt.settings != nil {
				s = tt.settings(f)
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			d := newRealDatasource(t, ctx, s)
			res, err := d.CheckHealth(ctx, &backend.CheckHealthRequest{})
			if err != nil {
				t.Fatalf("CheckHealth returned an error instead of a result: %v", err)
			}
			t.Logf("health: %v %s", res.Status, res.Message)
			if res.Status != tt.wantStatus {
				t.Errorf("status %v, want %v (message %q)", res.Status, tt.wantStatus, res.Message)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Message, w) {
					t.Errorf("message %q\nlacks %q", res.Message, w)
				}
			}
			for _, secret := range s.DecryptedSecureJSONData {
				if strings.Contains(res.Message, secret) {
					t.Errorf("message leaks a secret: %q", res.Message)
				}
			}
			if n := f.requests.Load(); tt.wantNoCall && n != 0 {
				t.Errorf("%d requests reached the server, want none", n)
			}
		})
	}
}

func TestCheckHealthGivesUp(t *testing.T) {
	// The server never answers; released when the test ends so Close does not wait on it.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	f := &fakeCloudWatch{region: "us-east-1", url: hang.URL}
	d := newRealDatasource(t, context.Background(), f.settings("us-east-1", fakeAccessKey, fakeSecretKey))
	d.healthTimeout = 50 * time.Millisecond
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != backend.HealthStatusError || !strings.Contains(res.Message, "did not answer in time") {
		t.Errorf("health %v: %s", res.Status, res.Message)
	}
}

// closedLoopbackURL returns an http URL on loopback where nothing listens.
func closedLoopbackURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// Save & test also asks each region that has an endpoint of its own (regionEndpoints),
// through the production client, signed for that region: one that answers is named, one
// that refuses the permission or cannot be reached is a warning naming the region and its
// fix, and the data source stays usable (the default region works).
func TestCheckHealthProbesRegionEndpoints(t *testing.T) {
	home := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	west := (&fakeCloudWatch{region: "us-west-2"}).start(t)
	denied := (&fakeCloudWatch{region: "eu-central-1", denied: map[string]string{"/api/v1/query": "cloudwatch:GetMetricData"}}).start(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	jd, _ := json.Marshal(map[string]any{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": home.url,
		"regionEndpoints": map[string]string{"us-west-2": west.url, "eu-central-1": denied.url, "ap-south-1": closedURL, "us-east-1": home.url}})
	d := newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{UID: "regions-health", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{"accessKey": fakeAccessKey, "secretKey": fakeSecretKey}})
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != backend.HealthStatusOk {
		t.Fatalf("status %v (%s): the default region works, so Save & test succeeds with warnings", res.Status, res.Message)
	}
	for _, want := range []string{
		"Endpoints per region answer for us-west-2.",
		"Warning: region ap-south-1, with its own endpoint, does not answer",
		"Warning: region eu-central-1, with its own endpoint, does not answer",
		"cloudwatch:GetMetricData",
	} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message lacks %q:\n%s", want, res.Message)
		}
	}
	if west.requests.Load() == 0 || denied.requests.Load() == 0 {
		t.Errorf("requests: us-west-2 %d, eu-central-1 %d; each region's endpoint is probed", west.requests.Load(), denied.requests.Load())
	}
	if strings.Contains(res.Message, "us-east-1,") || strings.Contains(res.Message, "region us-east-1") {
		t.Errorf("the default region is checked by the three probes, not again as a region endpoint: %s", res.Message)
	}
}

// A region endpoint that never answers takes at most a third of Save & test's budget: the
// warning names it, and the alarms and inventory checks after it still get their answers
// instead of running out of time.
func TestCheckHealthHangingRegionEndpoint(t *testing.T) {
	home := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer hang.Close()
	defer close(release)
	jd, _ := json.Marshal(map[string]any{"authType": "keys", "defaultRegion": "us-east-1", "endpoint": home.url,
		"regionEndpoints": map[string]string{"ap-south-1": hang.URL}})
	d := newRealDatasource(t, context.Background(), backend.DataSourceInstanceSettings{UID: "hanging-region", JSONData: jd,
		DecryptedSecureJSONData: map[string]string{"accessKey": fakeAccessKey, "secretKey": fakeSecretKey}})
	d.healthTimeout = 3 * time.Second
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "Warning: region ap-south-1") {
		t.Fatalf("status %v, message %s: want OK with a warning naming ap-south-1", res.Status, res.Message)
	}
	_, optional, _ := strings.Cut(res.Message, "cloudwatch:DescribeAlarms")
	if optional == "" || strings.Contains(optional, "did not answer in time") {
		t.Errorf("the alarms and inventory checks ran out of time behind the hanging region:\n%s", res.Message)
	}
}
