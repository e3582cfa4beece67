package awsauth

import "testing"

func TestCloudTrailEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       Settings
		wantURL string
	}{
		{name: "region only", s: Settings{Region: "us-east-1"}, wantURL: "https://cloudtrail.us-east-1.amazonaws.com"},
		{name: "CloudWatch URL", s: Settings{DatasourceURL: "https://monitoring.eu-west-1.amazonaws.com"}, wantURL: "https://cloudtrail.eu-west-1.amazonaws.com"},
		{name: "china partition", s: Settings{Region: "cn-north-1"}, wantURL: "https://cloudtrail.cn-north-1.amazonaws.com.cn"},
		{name: "emulator on loopback serves it", s: Settings{Endpoint: "http://127.0.0.1:9090", Region: "us-east-1"}, wantURL: "http://127.0.0.1:9090"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := ResolveEndpoint(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			got := CloudTrailEndpoint(ep)
			if got.URL.String() != tc.wantURL || got.Region != ep.Region {
				t.Errorf("got %s in %s, want %s in %s", got.URL, got.Region, tc.wantURL, ep.Region)
			}
		})
	}
}
