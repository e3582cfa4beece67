package awsauth

import (
	"strings"
	"testing"
)

// TestRegionalServiceEndpoints: CloudTrail and STS go to the region's host of their service
// when the data source uses CloudWatch's, else to the custom endpoint.
func TestRegionalServiceEndpoints(t *testing.T) {
	services := map[string]func(Endpoint) Endpoint{"cloudtrail": CloudTrailEndpoint, "sts": STSEndpoint}
	for _, tc := range []struct {
		name    string
		s       Settings
		wantURL string // SERVICE stands for the service's DNS prefix
		custom  bool   // IsAWSEndpoint is false: its STS answer is not AWS's
	}{
		{name: "region only", s: Settings{Region: "us-east-1"}, wantURL: "https://SERVICE.us-east-1.amazonaws.com"},
		{name: "CloudWatch URL", s: Settings{DatasourceURL: "https://monitoring.eu-west-1.amazonaws.com"}, wantURL: "https://SERVICE.eu-west-1.amazonaws.com"},
		{name: "china partition", s: Settings{Region: "cn-north-1"}, wantURL: "https://SERVICE.cn-north-1.amazonaws.com.cn"},
		{name: "emulator on loopback serves it", s: Settings{Endpoint: "http://127.0.0.1:9090", Region: "us-east-1"}, wantURL: "http://127.0.0.1:9090", custom: true},
	} {
		if ep, err := ResolveEndpoint(tc.s); err != nil || IsAWSEndpoint(ep) == tc.custom {
			t.Errorf("%s: IsAWSEndpoint(%v) = %v (%v), want %v", tc.name, ep.URL, IsAWSEndpoint(ep), err, !tc.custom)
		}
		for service, endpoint := range services {
			t.Run(service+"/"+tc.name, func(t *testing.T) {
				ep, err := ResolveEndpoint(tc.s)
				if err != nil {
					t.Fatal(err)
				}
				got := endpoint(ep)
				if want := strings.Replace(tc.wantURL, "SERVICE", service, 1); got.URL.String() != want || got.Region != ep.Region {
					t.Errorf("got %s in %s, want %s in %s", got.URL, got.Region, want, ep.Region)
				}
			})
		}
	}
}
