package awsauth

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// PromQLRegions are the regions where CloudWatch answers PromQL (docs/cloudwatch-promql.md §1,
// the 31 of the newest region table), sorted.
var PromQLRegions = []string{
	"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
	"ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4",
	"ap-southeast-5", "ap-southeast-6", "ap-southeast-7", "ca-central-1", "ca-west-1", "eu-central-1",
	"eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3",
	"mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
}

// IsRegionName reports whether s has the shape of an AWS region name (lower case, like
// us-east-1 or cn-north-1); it says nothing of whether the region exists.
func IsRegionName(s string) bool { return regionPattern.MatchString(s) }

// Partition is a region's AWS partition: "aws-cn" for cn-*, "aws-us-gov" for us-gov-*, else "aws".
func Partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// RegionNameError is a value that is not a region name; Suggest is the closest known region
// when one is near (edit distance ≤ 2, case ignored), else "".
type RegionNameError struct {
	Value, Suggest string
}

func (e *RegionNameError) Error() string {
	msg := fmt.Sprintf("region %q is not an AWS region name (like us-east-1)", e.Value)
	if strings.Contains(e.Value, "$") {
		// Alerting and other callers without a dashboard send variables as they are written.
		msg += ": a dashboard variable was not replaced (alert rules and API calls do not interpolate dashboard variables); name the region itself"
	} else {
		msg += ": use the region's lower-case name as the AWS console shows it"
	}
	if e.Suggest != "" {
		msg += "; did you mean " + e.Suggest + "?"
	}
	return msg
}

// Is makes backend.IsDownstreamError see a bad region name as the user's to fix.
func (e *RegionNameError) Is(target error) bool { return (&SettingError{}).Is(target) }

// CheckRegionName refuses a value that is not a region name with a *RegionNameError whose
// suggestion comes from known (and PromQLRegions).
func CheckRegionName(value string, known []string) error {
	if IsRegionName(value) {
		return nil
	}
	return &RegionNameError{Value: value, Suggest: ClosestRegion(value, known)}
}

// maxSuggestDistance is how far (in edits) a typo may be from the region it suggests.
const maxSuggestDistance = 2

// ClosestRegion is the region of known ∪ PromQLRegions nearest to value by edit distance
// (case ignored), when it is at most 2 edits away and not value itself; else "". Ties go to
// the first in sorted order, so the answer does not depend on the order of known.
func ClosestRegion(value string, known []string) string {
	return ClosestOf(value, slices.Concat(known, PromQLRegions))
}

// ClosestOf is ClosestRegion among cands alone: a region not allowed is best answered with
// an allowed one, even when a region not allowed is as near.
func ClosestOf(value string, cands []string) string {
	v := strings.ToLower(strings.TrimSpace(value))
	if len(v) > 64 { // no region is near; spare the quadratic work
		return ""
	}
	cands = slices.Clone(cands)
	slices.Sort(cands)
	best, bestD := "", maxSuggestDistance+1
	for _, c := range slices.Compact(cands) {
		if c == value {
			continue
		}
		if d := editDistance(v, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by bytes (region names are ASCII).
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// DefaultRegion is the region requests go to when a query names none: the endpoint's
// region when the settings resolve, else jsonData.defaultRegion.
func DefaultRegion(s Settings) string {
	if ep, err := ResolveEndpoint(s); err == nil {
		return ep.Region
	}
	return s.Region
}

// ResolveRegionEndpoint is where requests for region go and are signed for:
// jsonData.regionEndpoints[region]; else, for the default region, what ResolveEndpoint
// picks; else jsonData.endpoint when it is a custom endpoint (one for every region, each
// request still signed for its own region); else https://monitoring.<region>.amazonaws.com(.cn).
// The datasource URL and a CloudWatch host in jsonData.endpoint belong to the default
// region: another region's requests would be refused there, signed for the wrong region.
// Every endpoint passes ResolveEndpoint's safety rules; "" is the default region.
func ResolveRegionEndpoint(s Settings, region string) (Endpoint, error) {
	def := DefaultRegion(s)
	if region == "" {
		region = def
	}
	if raw, ok := s.RegionEndpoints[region]; ok && region != "" {
		key := RegionEndpointSetting(region)
		return resolve(Settings{Region: region, Endpoint: raw}, key, key)
	}
	if region == def {
		return ResolveEndpoint(s)
	}
	if err := CheckRegionName(region, nil); err != nil {
		return Endpoint{}, err
	}
	r := s
	r.Region, r.DatasourceURL = region, ""
	if u, err := url.Parse(s.Endpoint); err == nil && awsHost.MatchString(strings.ToLower(u.Hostname())) {
		r.Endpoint = "" // the default region's CloudWatch host; other regions have their own
	}
	return ResolveEndpoint(r)
}

// RegionEndpointSetting names regionEndpoints[region] in messages.
func RegionEndpointSetting(region string) Setting {
	return Setting(fmt.Sprintf("jsonData.regionEndpoints[%q]", region))
}
