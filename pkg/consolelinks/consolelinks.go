// Package consolelinks writes AWS console URLs for SageMaker endpoints and inference
// components, CloudWatch alarms and CloudWatch Logs Insights, for the region's partition
// (China and GovCloud have their own console hosts). Pure: no calls, no state.
package consolelinks

import (
	"fmt"
	"net/url"
	"strings"
)

// base is the console's origin for a region: the region's host in the commercial partition,
// the partition's console elsewhere. "" for no region (no link is better than a wrong one).
func base(region string) string {
	switch {
	case region == "":
		return ""
	case strings.HasPrefix(region, "cn-"):
		return "https://" + region + ".console.amazonaws.cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "https://" + region + ".console.amazonaws-us-gov.com"
	}
	return "https://" + region + ".console.aws.amazon.com"
}

func page(region, service, fragment string) string {
	b := base(region)
	if b == "" {
		return ""
	}
	return b + "/" + service + "/home?region=" + url.QueryEscape(region) + "#" + fragment
}

// Endpoint is the SageMaker console page of an endpoint.
func Endpoint(region, name string) string {
	if name == "" {
		return ""
	}
	return page(region, "sagemaker", "/endpoints/"+url.PathEscape(name))
}

// InferenceComponent is the SageMaker console page of an inference component.
func InferenceComponent(region, name string) string {
	if name == "" {
		return ""
	}
	return page(region, "sagemaker", "/inference-components/"+url.PathEscape(name))
}

// CloudTrailEvent is the CloudTrail console page of one event of the event history.
func CloudTrailEvent(region, id string) string {
	if id == "" {
		return ""
	}
	return page(region, "cloudtrailv2", "/events/"+url.PathEscape(id))
}

// Alarm is the CloudWatch console page of an alarm. Alarm names may hold spaces and most
// punctuation; they are escaped as a URI component (space as %20, not +).
func Alarm(region, name string) string {
	if name == "" {
		return ""
	}
	return page(region, "cloudwatch", "alarmsV2:alarm/"+strings.ReplaceAll(url.QueryEscape(name), "+", "%20"))
}

// Log groups SageMaker writes the containers' logs to.
func EndpointLogGroup(endpoint string) string { return "/aws/sagemaker/Endpoints/" + endpoint }
func ComponentLogGroup(ic string) string      { return "/aws/sagemaker/InferenceComponents/" + ic }

// LogsInsightsQuery is the query a Logs Insights link opens with: the latest messages first.
const LogsInsightsQuery = "fields @timestamp, @message, @logStream\n| sort @timestamp desc\n| limit 200"

// LogsInsights opens CloudWatch Logs Insights on the log groups over the last hour with
// LogsInsightsQuery. The console reads its state from the fragment in its own encoding:
// a JSURL-like object ('…' strings, ~ separators, *XX escapes) whose URI-escaped form has
// % written as $.
func LogsInsights(region string, logGroups ...string) string {
	if len(logGroups) == 0 {
		return ""
	}
	var sources strings.Builder
	for _, g := range logGroups {
		sources.WriteString("~'" + jsurl(g))
	}
	detail := "~(end~0~start~-3600~timeType~'RELATIVE~unit~'seconds~editorString~'" + jsurl(LogsInsightsQuery) +
		"~source~(" + sources.String() + "))"
	return page(region, "cloudwatch", "logsV2:logs-insights"+strings.ReplaceAll(url.QueryEscape("?queryDetail="), "%", "$")+detail)
}

// jsurl escapes a string value for the console's fragment: letters, digits, '-', '_' and
// '.' stay, every other character becomes *XX (or **XXXX beyond one byte).
func jsurl(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, "*%02x", r)
		case r < 0x10000:
			fmt.Fprintf(&b, "**%04x", r)
		default: // outside the BMP: the two UTF-16 halves, as the console's JavaScript sees them
			r -= 0x10000
			fmt.Fprintf(&b, "**%04x**%04x", 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		}
	}
	return b.String()
}
