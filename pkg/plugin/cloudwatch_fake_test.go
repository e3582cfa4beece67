package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// Keys the fake CloudWatch accepts.
const (
	fakeAccessKey = "AKIDFAKECLOUDWATCH"
	fakeSecretKey = "fake-cloudwatch-secret-0123456789abcdef"
)

// fakeCloudWatch is an httptest CloudWatch that verifies every signature with the
// independent sigv4verify.Verifier and answers the three probes Save & test makes. Fields set
// before start() shape its behaviour.
type fakeCloudWatch struct {
	region, service string
	clockOffset     time.Duration     // the server's clock minus real time
	denied          map[string]string // path → IAM action refused with AccessDeniedException
	series          string            // JSON data of /api/v1/series for the SageMaker probes; default: no series
	vendedSeries    string            // JSON data of /api/v1/series for the enrichment probe; default: no series
	queryStatus     int               // when set, /api/v1/query answers this status with a Prometheus error
	requests        atomic.Int64
	userAgent       atomic.Value // the last PromQL API request's User-Agent
	url             string
}

func (f *fakeCloudWatch) start(t *testing.T) *fakeCloudWatch {
	t.Helper()
	v := &sigv4verify.Verifier{
		Region:      f.region,
		Service:     f.service,
		Credentials: map[string]sigv4verify.Credential{fakeAccessKey: {AccessKeyID: fakeAccessKey, SecretAccessKey: fakeSecretKey}},
		Now:         func() time.Time { return time.Now().Add(f.clockOffset) },
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if strings.HasPrefix(r.URL.Path, "/api/v1/") { // not the AWS SDK's alarm and inventory calls
			f.userAgent.Store(r.UserAgent())
		}
		if err := v.Verify(r); err != nil {
			sigv4verify.WriteAuthError(w, err)
			return
		}
		if action, ok := f.denied[r.URL.Path]; ok {
			w.Header().Set("x-amzn-ErrorType", "AccessDeniedException")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"User: arn:aws:iam::123456789012:user/grafana is not authorized to perform: %s"}`, action)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/query":
			if f.queryStatus != 0 {
				w.WriteHeader(f.queryStatus)
				fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"Selector must have a metric name"}`)
				return
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"scalar","result":[%d,"2"]}}`, time.Now().Unix())
		case "/api/v1/labels":
			fmt.Fprint(w, `{"status":"success","data":["__name__"]}`)
		case "/api/v1/series":
			data := f.series
			if _ = r.ParseForm(); slices.Contains(r.Form["match[]"], "Invocations") {
				data = f.vendedSeries
			}
			if data == "" {
				data = "[]"
			}
			fmt.Fprintf(w, `{"status":"success","data":%s}`, data)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"status":"error","errorType":"not_found","error":"not found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// settings is a keys-auth datasource for this fake, with overrides applied to jsonData.
func (f *fakeCloudWatch) settings(region, accessKey, secretKey string) backend.DataSourceInstanceSettings {
	jd, _ := json.Marshal(map[string]string{"authType": "keys", "defaultRegion": region, "endpoint": f.url})
	return backend.DataSourceInstanceSettings{
		UID:                     "fake",
		JSONData:                jd,
		DecryptedSecureJSONData: map[string]string{"accessKey": accessKey, "secretKey": secretKey},
	}
}

// The production client names the plugin in every request's User-Agent (CloudTrail and
// proxies show who called), from the id's one home.
func TestRequestsNameThePlugin(t *testing.T) {
	f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
	d := newRealDatasource(t, context.Background(), f.settings("us-east-1", fakeAccessKey, fakeSecretKey))
	if _, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.userAgent.Load().(string); got != models.PluginID {
		t.Errorf("User-Agent %q, want %q", got, models.PluginID)
	}
}

// newRealDatasource builds a datasource with the production client factory.
func newRealDatasource(t *testing.T, ctx context.Context, s backend.DataSourceInstanceSettings) *Datasource {
	t.Helper()
	d, err := New(ctx, s, NewClient)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Dispose)
	return d
}
