package changes

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode"
)

// FuzzParse: no record panics Parse, a change it returns is complete and printable, and
// nothing of userIdentity but the ARN (or the calling service) reaches it.
func FuzzParse(f *testing.F) {
	f.Add(event(SourceSageMaker, "UpdateInferenceComponent", `{"inferenceComponentName":"chat-ic","specification":{"container":{"image":"vllm:1.4"}}}`))
	f.Add(event(SourceAutoScaling, "PutScalingPolicy", `{"serviceNamespace":"sagemaker","resourceId":"endpoint/e/variant/v","targetTrackingScalingPolicyConfiguration":{"targetValue":3}}`))
	f.Add(event(SourceSageMaker, "CreateEndpointConfig", `{"endpointConfigName":"c","productionVariants":[{"variantName":"v","instanceType":"ml.g5.xlarge"},7,null]}`))
	f.Add(`{"eventSource":"sagemaker.amazonaws.com","eventName":"UpdateEndpoint","eventTime":"2026-01-01T00:00:00Z","requestParameters":{"endpointName":"\u0000e\ud800"}}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, ev string) {
		c, err := Parse(ev)
		if err != nil {
			if c.Resource != "" || c.Who != "" {
				t.Fatalf("Parse failed (%v) but returned a change %+v", err, c)
			}
			if !errors.Is(err, ErrNotAChange) && err.Error() == "" {
				t.Fatal("an error without words")
			}
			return
		}
		if c.Time.IsZero() || c.Resource == "" || c.Kind == "" {
			t.Fatalf("incomplete change %+v", c)
		}
		b, _ := json.Marshal(c)
		for _, s := range identitySecrets(ev) {
			if strings.Contains(string(b), s) {
				t.Fatalf("the change carries %q of userIdentity: %s", s, b)
			}
		}
		for _, s := range append([]string{c.Who, c.Resource, c.Endpoint, c.Region, c.Account, c.EventID}, values(c.Diff)...) {
			if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || len([]rune(s)) > maxValueRunes+1 {
				t.Fatalf("value %q is not printable or not bounded", s)
			}
		}
	})
}

func values(ds []Delta) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Field, d.From, d.To)
	}
	return out
}

// identitySecrets are the string values of userIdentity other than its ARN, account,
// type and invokedBy, long enough not to occur by chance, found nowhere else in the event
// (a value the request repeats may rightly show as the request's).
func identitySecrets(ev string) []string {
	var r struct {
		UserIdentity map[string]any `json:"userIdentity"`
	}
	if json.Unmarshal([]byte(ev), &r) != nil {
		return nil
	}
	// encoding/json matches keys to fields regardless of case, so "Arn" is the ARN too.
	var arns []string
	for k, v := range r.UserIdentity {
		if a, ok := v.(string); ok && strings.EqualFold(k, "arn") {
			arns = append(arns, a)
		}
	}
	arn := strings.Join(arns, "\n")
	var out []string
	var walk func(k string, v any)
	walk = func(k string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(k, x)
			}
		case string:
			switch strings.ToLower(k) {
			case "arn", "accountid", "type", "invokedby":
				return
			}
			if len(v) >= 12 && !strings.Contains(arn, v) && strings.Count(ev, v) == 1 {
				out = append(out, v)
			}
		}
	}
	for k, v := range r.UserIdentity {
		walk(k, v)
	}
	return out
}
