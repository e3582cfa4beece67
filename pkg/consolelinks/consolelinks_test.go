package consolelinks

import (
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestLinks(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"endpoint", Endpoint("us-east-1", "chat"),
			"https://us-east-1.console.aws.amazon.com/sagemaker/home?region=us-east-1#/endpoints/chat"},
		{"inference component", InferenceComponent("eu-west-1", "chat-llama"),
			"https://eu-west-1.console.aws.amazon.com/sagemaker/home?region=eu-west-1#/inference-components/chat-llama"},
		{"China", Endpoint("cn-north-1", "chat"),
			"https://cn-north-1.console.amazonaws.cn/sagemaker/home?region=cn-north-1#/endpoints/chat"},
		{"GovCloud", InferenceComponent("us-gov-west-1", "ic"),
			"https://us-gov-west-1.console.amazonaws-us-gov.com/sagemaker/home?region=us-gov-west-1#/inference-components/ic"},
		{"alarm with spaces and punctuation", Alarm("us-west-2", "kv cache/chat: 90% & up+"),
			"https://us-west-2.console.aws.amazon.com/cloudwatch/home?region=us-west-2#alarmsV2:alarm/kv%20cache%2Fchat%3A%2090%25%20%26%20up%2B"},
		{"CloudTrail event", CloudTrailEvent("us-east-1", "0f6e7c2a-1b2c-4d3e-8f9a-0123456789ab"),
			"https://us-east-1.console.aws.amazon.com/cloudtrailv2/home?region=us-east-1#/events/0f6e7c2a-1b2c-4d3e-8f9a-0123456789ab"},
		{"no event id, no link", CloudTrailEvent("us-east-1", ""), ""},
		{"no region, no link", Endpoint("", "chat"), ""},
		{"no name, no link", Alarm("us-east-1", ""), ""},
		{"logs insights of an endpoint and an IC", LogsInsights("us-east-1", EndpointLogGroup("chat"), ComponentLogGroup("chat-llama")),
			"https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#logsV2:logs-insights$3FqueryDetail$3D" +
				"~(end~0~start~-3600~timeType~'RELATIVE~unit~'seconds~editorString~'" +
				"fields*20*40timestamp*2c*20*40message*2c*20*40logStream*0a*7c*20sort*20*40timestamp*20desc*0a*7c*20limit*20200" +
				"~source~(~'*2faws*2fsagemaker*2fEndpoints*2fchat~'*2faws*2fsagemaker*2fInferenceComponents*2fchat-llama))"},
		{"logs insights in China", LogsInsights("cn-northwest-1", "g"),
			"https://cn-northwest-1.console.amazonaws.cn/cloudwatch/home?region=cn-northwest-1#logsV2:logs-insights$3FqueryDetail$3D" +
				"~(end~0~start~-3600~timeType~'RELATIVE~unit~'seconds~editorString~'" +
				"fields*20*40timestamp*2c*20*40message*2c*20*40logStream*0a*7c*20sort*20*40timestamp*20desc*0a*7c*20limit*20200~source~(~'g))"},
		{"no log group, no link", LogsInsights("us-east-1"), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
}

// TestAlarmNamesRoundTrip: whatever an alarm is called, its link parses as a URL and the
// fragment decodes back to the name.
func TestAlarmNamesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	alphabet := []rune("abcXYZ019 -_.:/%&+#?=@~'()*!éß中")
	for i := range 500 {
		n := 1 + rng.IntN(30)
		name := make([]rune, n)
		for j := range name {
			name[j] = alphabet[rng.IntN(len(alphabet))]
		}
		link := Alarm("ap-southeast-2", string(name))
		u, err := url.Parse(link)
		if err != nil {
			t.Fatalf("%d: %q: %v", i, link, err)
		}
		if u.Host != "ap-southeast-2.console.aws.amazon.com" || u.Query().Get("region") != "ap-southeast-2" {
			t.Fatalf("%d: host %q region %q", i, u.Host, u.Query().Get("region"))
		}
		frag, ok := strings.CutPrefix(u.EscapedFragment(), "alarmsV2:alarm/")
		if !ok {
			t.Fatalf("%d: fragment %q", i, u.EscapedFragment())
		}
		if strings.ContainsAny(frag, " +#?&") {
			t.Errorf("%d: fragment %q holds a character that changes its meaning", i, frag)
		}
		if got, err := url.PathUnescape(frag); err != nil || got != string(name) {
			t.Errorf("%d: %q decodes to %q (%v)", i, string(name), got, err)
		}
	}
}

// TestJSURLDecodes: the log group escaping decodes back (*XX and **XXXX as UTF-16 units).
func TestJSURLDecodes(t *testing.T) {
	for _, s := range []string{"/aws/sagemaker/Endpoints/chat-1", "a b*c~d'e", "中文", "emoji 😀"} {
		if got := unJSURL(t, jsurl(s)); got != s {
			t.Errorf("%q → %q → %q", s, jsurl(s), got)
		}
	}
}

func unJSURL(t *testing.T, s string) string {
	var units []uint16
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "**"):
			v, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
			if err != nil {
				t.Fatal(err)
			}
			units, i = append(units, uint16(v)), i+6
		case s[i] == '*':
			v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				t.Fatal(err)
			}
			units, i = append(units, uint16(v)), i+3
		default:
			units, i = append(units, uint16(s[i])), i+1
		}
	}
	var out []rune
	for i := 0; i < len(units); i++ {
		if u := rune(units[i]); u >= 0xD800 && u < 0xDC00 && i+1 < len(units) {
			out = append(out, 0x10000+(u-0xD800)<<10+(rune(units[i+1])-0xDC00))
			i++
			continue
		}
		out = append(out, rune(units[i]))
	}
	return string(out)
}
