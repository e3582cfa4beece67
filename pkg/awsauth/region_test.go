package awsauth

import (
	"errors"
	"slices"
	"testing"
)

func TestPromQLRegions(t *testing.T) {
	if len(PromQLRegions) != 31 {
		t.Errorf("%d PromQL regions, the docs list 31", len(PromQLRegions))
	}
	if !slices.IsSorted(PromQLRegions) || len(slices.Compact(slices.Clone(PromQLRegions))) != len(PromQLRegions) {
		t.Error("PromQLRegions must be sorted and distinct")
	}
	for _, r := range PromQLRegions {
		if !IsRegionName(r) || Partition(r) != "aws" {
			t.Errorf("%q is not a commercial region name", r)
		}
	}
}

func TestCheckRegionName(t *testing.T) {
	tests := []struct {
		value, suggest string
		ok             bool
	}{
		{value: "us-east-1", ok: true},
		{value: "cn-north-1", ok: true},
		{value: "us-gov-west-1", ok: true},
		{value: "us-east1", suggest: "us-east-1"},
		{value: "US-EAST-1", suggest: "us-east-1"},
		{value: "useast-1", suggest: "us-east-1"},
		{value: "eu-west-1 ", suggest: "eu-west-1"},
		{value: "$region", suggest: ""},
		{value: "", suggest: ""},
		{value: "mars-central", suggest: ""},
		{value: "eu-westt", suggest: "eu-west-1"},
		{value: "ap-southeast", suggest: "ap-southeast-1"},
		{value: "eu-wst", suggest: ""}, // three edits from eu-west-1
		{value: "apsoutheast", suggest: ""},
	}
	for _, tc := range tests {
		err := CheckRegionName(tc.value, nil)
		if tc.ok {
			if err != nil {
				t.Errorf("%q: %v", tc.value, err)
			}
			continue
		}
		var re *RegionNameError
		if !errors.As(err, &re) {
			t.Fatalf("%q: got %v, want a *RegionNameError", tc.value, err)
		}
		if re.Suggest != tc.suggest {
			t.Errorf("%q: suggests %q, want %q (%v)", tc.value, re.Suggest, tc.suggest, err)
		}
	}
}

// A custom known region is suggested too, and ties go to the sorted first.
func TestClosestRegion(t *testing.T) {
	if got := ClosestRegion("xx-lab-2", []string{"xx-lab-1"}); got != "xx-lab-1" {
		t.Errorf("got %q, want the known xx-lab-1", got)
	}
	if got := ClosestRegion("us-west-9", nil); got != "us-west-1" {
		t.Errorf("got %q, want us-west-1 (first of the equally near)", got)
	}
	if got := ClosestRegion("us-west-2", nil); got != "us-west-1" {
		t.Errorf("a valid region suggests a neighbour only, got %q", got)
	}
}

func TestResolveRegionEndpoint(t *testing.T) {
	emu := map[string]string{"us-west-2": "http://127.0.0.1:9002"}
	west := RegionEndpointSetting("us-west-2")
	tests := []struct {
		name, region string
		s            Settings
		wantURL      string
		wantRegion   string
		wantErr      wantErr
	}{
		{name: "default region", s: Settings{Region: "us-east-1"}, wantURL: "https://monitoring.us-east-1.amazonaws.com", wantRegion: "us-east-1"},
		{name: "other region's own host", s: Settings{Region: "us-east-1"}, region: "eu-west-1", wantURL: "https://monitoring.eu-west-1.amazonaws.com", wantRegion: "eu-west-1"},
		{name: "china host", s: Settings{Region: "cn-north-1"}, region: "cn-northwest-1", wantURL: "https://monitoring.cn-northwest-1.amazonaws.com.cn", wantRegion: "cn-northwest-1"},
		{name: "one custom endpoint for all", s: Settings{Region: "us-east-1", Endpoint: "http://127.0.0.1:9000"}, region: "us-west-2", wantURL: "http://127.0.0.1:9000", wantRegion: "us-west-2"},
		{name: "region endpoint beats the endpoint", s: Settings{Region: "us-east-1", Endpoint: "http://127.0.0.1:9000", RegionEndpoints: emu}, region: "us-west-2", wantURL: "http://127.0.0.1:9002", wantRegion: "us-west-2"},
		{name: "region endpoint of the default region", s: Settings{Region: "us-west-2", RegionEndpoints: emu}, wantURL: "http://127.0.0.1:9002", wantRegion: "us-west-2"},
		{name: "URL is the default region's alone", s: Settings{DatasourceURL: "http://localhost:9090", Region: "us-east-1"}, region: "us-west-2", wantURL: "https://monitoring.us-west-2.amazonaws.com", wantRegion: "us-west-2"},
		{name: "derived default region keeps its URL", s: Settings{DatasourceURL: "https://monitoring.eu-west-1.amazonaws.com"}, region: "eu-west-1", wantURL: "https://monitoring.eu-west-1.amazonaws.com", wantRegion: "eu-west-1"},
		{name: "CloudWatch endpoint is the default region's", s: Settings{Region: "us-east-1", Endpoint: "https://monitoring.us-east-1.amazonaws.com"}, region: "ap-south-1", wantURL: "https://monitoring.ap-south-1.amazonaws.com", wantRegion: "ap-south-1"},
		{name: "region endpoint plain http elsewhere", s: Settings{Region: "us-east-1", RegionEndpoints: map[string]string{"us-west-2": "http://10.1.2.3"}}, region: "us-west-2", wantErr: settingErr("plain http to a non-loopback host", west, west)},
		// Go's resolver asks DNS for *.localhost (only "localhost" is in /etc/hosts), so the
		// name may be anywhere: signed requests in clear text would leave the machine.
		{name: "region endpoint plain http to a .localhost name", s: Settings{Region: "us-east-1", RegionEndpoints: map[string]string{"us-west-2": "http://cw.localhost:9002"}}, region: "us-west-2", wantErr: settingErr("plain http to a non-loopback host", west, west)},
		{name: "region endpoint in another region", s: Settings{Region: "us-east-1", RegionEndpoints: map[string]string{"us-west-2": "https://monitoring.eu-west-1.amazonaws.com"}}, region: "us-west-2", wantErr: settingErr(`is in region "eu-west-1"`, west, west)},
		{name: "region endpoint with credentials", s: Settings{Region: "us-east-1", RegionEndpoints: map[string]string{"us-west-2": "https://u:p@cw.example"}}, region: "us-west-2", wantErr: settingErr("must not carry user credentials", west, west)},
		{name: "not a region", s: Settings{Region: "us-east-1"}, region: "evil.example/x", wantErr: wantErr{badRegion: "evil.example/x", text: "is not an AWS region name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := ResolveRegionEndpoint(tc.s, tc.region)
			checkErr(t, err, tc.wantErr)
			if err != nil {
				return
			}
			if ep.URL.String() != tc.wantURL || ep.Region != tc.wantRegion {
				t.Errorf("got %s in %s, want %s in %s", ep.URL, ep.Region, tc.wantURL, tc.wantRegion)
			}
		})
	}
}
