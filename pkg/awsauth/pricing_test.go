package awsauth

import (
	"net/url"
	"strings"
	"testing"
)

func TestPricingEndpoint(t *testing.T) {
	for _, tc := range []struct {
		host, wantURL, wantRegion, wantErr string
	}{
		{"monitoring.us-west-2.amazonaws.com", "https://api.pricing.us-east-1.amazonaws.com", "us-east-1", ""},
		{"monitoring.eu-west-1.amazonaws.com", "https://api.pricing.eu-central-1.amazonaws.com", "eu-central-1", ""},
		{"monitoring.me-south-1.amazonaws.com", "https://api.pricing.eu-central-1.amazonaws.com", "eu-central-1", ""},
		{"monitoring.ap-northeast-1.amazonaws.com", "https://api.pricing.ap-south-1.amazonaws.com", "ap-south-1", ""},
		{"monitoring.sa-east-1.amazonaws.com", "https://api.pricing.us-east-1.amazonaws.com", "us-east-1", ""},
		{"127.0.0.1:4566", "http://127.0.0.1:4566", "eu-west-1", ""}, // a custom endpoint serves it, for its region
		{"monitoring.cn-north-1.amazonaws.com.cn", "", "", "jsonData.priceTable"},
	} {
		scheme := "https"
		if strings.HasPrefix(tc.host, "127.") {
			scheme = "http"
		}
		in := Endpoint{URL: &url.URL{Scheme: scheme, Host: tc.host}, Region: "eu-west-1"}
		got, err := PricingEndpoint(in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one naming %s", tc.host, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.URL.String() != tc.wantURL || got.Region != tc.wantRegion {
			t.Errorf("%s: %v %s %v, want %s signed for %s", tc.host, got.URL, got.Region, err, tc.wantURL, tc.wantRegion)
		}
	}
}
