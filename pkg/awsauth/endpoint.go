package awsauth

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

var (
	regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)
	// awsHost matches CloudWatch's regional hosts in the commercial and China partitions.
	awsHost = regexp.MustCompile(`^monitoring\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$`)
)

// Endpoint is where signed requests may go and the region they are signed for.
type Endpoint struct {
	URL    *url.URL
	Region string
	Source Setting // the setting it came from, for error messages
}

// ResolveEndpoint picks the base URL (jsonData.endpoint, else the datasource
// URL, else https://monitoring.<defaultRegion>.amazonaws.com) and checks it
// is safe to sign for: a CloudWatch host of the configured region over
// https, an explicitly configured jsonData.endpoint, or plain http only to a
// loopback host. A datasource URL may name a CloudWatch or loopback host
// only; anything else has to be set deliberately as jsonData.endpoint.
func ResolveEndpoint(s Settings) (Endpoint, error) {
	return resolve(s, SetEndpoint, SetRegion)
}

// resolve is ResolveEndpoint with the names its messages give the explicit endpoint and the
// region (jsonData.regionEndpoints entries name themselves for both).
func resolve(s Settings, endpointSetting, regionSetting Setting) (Endpoint, error) {
	if s.Region != "" && !regionPattern.MatchString(s.Region) {
		return Endpoint{}, settingErrorf([]Setting{regionSetting}, "%[1]s %[2]q is not an AWS region name; use one like us-east-1", s.Region)
	}
	raw, source := s.Endpoint, endpointSetting
	if raw == "" {
		raw, source = s.DatasourceURL, SetURL
	}
	bad := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, settingErrorf([]Setting{source, regionSetting}, format, args...)
	}
	if raw == "" {
		if s.Region == "" {
			return Endpoint{}, settingErrorf([]Setting{regionSetting}, "no region configured: set %[1]s (e.g. us-east-1) so requests go to https://monitoring.<region>.amazonaws.com")
		}
		u := &url.URL{Scheme: "https", Host: "monitoring." + s.Region + dnsSuffix(s.Region)}
		return Endpoint{URL: u, Region: s.Region, Source: regionSetting}, nil
	}

	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return bad("%[1]s %[3]q is not an absolute URL; use https://monitoring.<region>.amazonaws.com", raw)
	}
	if u.User != nil {
		return bad("%[1]s must not carry user credentials; remove the user:password@ part and use the AWS authentication settings")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return bad("%[1]s %[3]q must not have a query or fragment; use the base URL only", u.Redacted())
	}
	host := strings.ToLower(u.Hostname())
	loopback := isLoopback(host)
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback {
			return bad("%[1]s %[3]q uses plain http to a non-loopback host; signed requests need https (plain http is allowed only to 127.0.0.1, ::1 or localhost)", u.Redacted())
		}
	default:
		return bad("%[1]s %[3]q must use https (or http to a loopback host)", u.Redacted())
	}

	if m := awsHost.FindStringSubmatch(host); m != nil {
		region := m[1]
		if s.Region != "" && region != s.Region {
			return bad("%[1]s is in region %[3]q but %[2]s is %[4]q; signatures are scoped to one region, so make them the same", region, s.Region)
		}
		if !regionPattern.MatchString(region) || (m[2] != "") != strings.HasPrefix(region, "cn-") {
			return bad("%[1]s host %[3]q does not name a valid region for its partition (amazonaws.com.cn serves cn-* regions only)", host)
		}
		if u.Path != "" && u.Path != "/" {
			return bad("%[1]s %[3]q must not have a path; CloudWatch serves /api/v1/* at the host root", u.Redacted())
		}
		u.Path, u.RawPath = "", ""
		return Endpoint{URL: u, Region: region, Source: source}, nil
	}

	if source != endpointSetting && !loopback {
		return Endpoint{}, settingErrorf([]Setting{SetURL, endpointSetting}, "%[1]s host %[3]q is not a CloudWatch endpoint (monitoring.<region>.amazonaws.com); "+
			"leave the URL empty to use the region's endpoint, or set %[2]s to send signed requests to a custom endpoint on purpose", host)
	}
	if s.Region == "" {
		return bad("%[1]s %[3]q is a custom endpoint, so the signing region cannot be derived from it; set %[2]s", u.Redacted())
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return Endpoint{URL: u, Region: s.Region, Source: source}, nil
}

// SageMakerEndpoint is where SageMaker API calls for ep may go: the region's
// https://api.sagemaker.<region>.amazonaws.com(.cn) when ep is CloudWatch's own regional
// host, otherwise ep itself (a custom endpoint, such as the emulator, serves both APIs).
// Pass the result to RestrictToEndpoint so nothing else is signed for.
func SageMakerEndpoint(ep Endpoint) Endpoint { return regionalService(ep, "api.sagemaker") }

// AutoScalingEndpoint is where Application Auto Scaling calls for ep may go: the region's
// https://application-autoscaling.<region>.amazonaws.com(.cn), or ep itself when it is a
// custom endpoint, as SageMakerEndpoint.
func AutoScalingEndpoint(ep Endpoint) Endpoint {
	return regionalService(ep, "application-autoscaling")
}

// CloudTrailEndpoint is where CloudTrail API calls for ep may go:
// https://cloudtrail.<region>.amazonaws.com(.cn), or ep itself when it is a custom endpoint
// (the emulator serves LookupEvents too), as SageMakerEndpoint.
func CloudTrailEndpoint(ep Endpoint) Endpoint { return regionalService(ep, "cloudtrail") }

// STSEndpoint is where STS calls (GetCallerIdentity) for ep may go: the region's
// https://sts.<region>.amazonaws.com(.cn), or ep itself when it is a custom endpoint (the
// emulator serves STS too), as SageMakerEndpoint.
func STSEndpoint(ep Endpoint) Endpoint { return regionalService(ep, "sts") }

// IsAWSEndpoint says whether ep is CloudWatch's own regional host, so that STSEndpoint and
// the other services' hosts for it are AWS's own too; false for a custom endpoint (an
// emulator, a proxy, a VPC endpoint's name), which answers for itself.
func IsAWSEndpoint(ep Endpoint) bool {
	return ep.URL != nil && awsHost.MatchString(strings.ToLower(ep.URL.Hostname()))
}

// regionalService is the host of service (its DNS prefix) in ep's region and partition
// when ep is CloudWatch's own regional host, else ep.
func regionalService(ep Endpoint, service string) Endpoint {
	if ep.URL == nil {
		return ep
	}
	m := awsHost.FindStringSubmatch(strings.ToLower(ep.URL.Hostname()))
	if m == nil {
		return ep
	}
	u := &url.URL{Scheme: "https", Host: service + "." + m[1] + ".amazonaws.com" + m[2]}
	return Endpoint{URL: u, Region: ep.Region, Source: ep.Source}
}

// dnsSuffix is the AWS domain of a region's partition: China regions live under .com.cn.
func dnsSuffix(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return ".amazonaws.com.cn"
	}
	return ".amazonaws.com"
}

// isLoopback is a loopback IP or the name localhost. Not *.localhost: Go's resolver asks
// DNS for those, so such a name may lead off the machine, and plain http would carry
// signed requests there in clear text.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PricingEndpoint is where Price List API calls for ep may go, and the region they are
// signed for. The Price List API answers in a few regions only and for every region, so
// when ep is CloudWatch's own host the call goes to the nearest of them
// (https://api.pricing.<us-east-1|eu-central-1|ap-south-1>.amazonaws.com); a custom
// endpoint (the emulator) serves it itself, signed for ep's region. The China partition
// has no Price List endpoint here: the error says to use a price table.
func PricingEndpoint(ep Endpoint) (Endpoint, error) {
	if ep.URL == nil {
		return ep, nil
	}
	m := awsHost.FindStringSubmatch(strings.ToLower(ep.URL.Hostname()))
	if m == nil {
		return ep, nil
	}
	if m[2] != "" {
		return Endpoint{}, fmt.Errorf("the AWS Price List API is not used for region %s (China partition): list its prices in the price table (jsonData.priceTable)", m[1])
	}
	region := PricingRegion(m[1])
	return Endpoint{URL: &url.URL{Scheme: "https", Host: "api.pricing." + region + ".amazonaws.com"}, Region: region, Source: ep.Source}, nil
}

// PricingRegion is the Price List API region nearest to region.
func PricingRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-"), strings.HasPrefix(region, "me-"), strings.HasPrefix(region, "af-"), strings.HasPrefix(region, "il-"):
		return "eu-central-1"
	}
	return "us-east-1"
}
