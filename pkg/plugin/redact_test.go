package plugin

import (
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	r := newRedactor(map[string]string{
		"accessKey":    "AKIDEXAMPLE",
		"secretKey":    "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
		"sessionToken": "",
		"short":        "1",
	})
	tests := []struct {
		name, in string
		leak     []string
		keep     string
	}{
		{"secret in message", "bad key wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY here", []string{"wJalrXUtnFEMI"}, "bad key [redacted] here"},
		{"access key", "AKIDEXAMPLE/20260101/us-east-1/monitoring", []string{"AKIDEXAMPLE"}, "[redacted]/20260101/us-east-1/monitoring"},
		{"token in canonical request", "host:x\nx-amz-security-token:FwoGZXIvYXdzEJr//////////wEaDOabc\nx-amz-date:1", []string{"FwoGZXIvYXdz"}, "x-amz-security-token:[redacted]\nx-amz-date:1"},
		{"token in query string", "GET /?X-Amz-Security-Token=IQoJb3JpZ2lu&x=1", []string{"IQoJb3JpZ2lu"}, "X-Amz-Security-Token=[redacted]&x=1"},
		{"short values are not secrets", "status 1 of 10", nil, "status 1 of 10"},
		{"clean text untouched", "no secrets here", nil, "no secrets here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, got := range []string{r.String(tt.in), string(r.Bytes([]byte(tt.in)))} {
				for _, l := range tt.leak {
					if strings.Contains(got, l) {
						t.Errorf("%q leaks %q", got, l)
					}
				}
				if !strings.Contains(got, tt.keep) {
					t.Errorf("got %q, want it to contain %q", got, tt.keep)
				}
			}
		})
	}
}

func TestRedactorBytesDoesNotCopyCleanBodies(t *testing.T) {
	r := newRedactor(map[string]string{"secretKey": "supersecretvalue"})
	in := []byte(`{"status":"success","data":["a","b"]}`)
	if out := r.Bytes(in); &out[0] != &in[0] {
		t.Error("clean body was copied")
	}
}
