package awsauth

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// creds are random credentials of AWS's shapes: a 20-character key id, a 40-character
// secret, a long base64 session token (with + / =), and a 64-hex signature.
type creds struct{ keyID, secret, token, signature string }

func randomCreds(r *rand.Rand, prefix string) creds {
	const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	pick := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	sig := make([]byte, 32)
	for i := range sig {
		sig[i] = byte(r.IntN(256))
	}
	return creds{
		keyID:     prefix + pick(upper, 16),
		secret:    pick(b64, 40),
		token:     "IQoJb3JpZ2luX2Vj" + pick(b64, 300) + "==",
		signature: hex.EncodeToString(sig),
	}
}

// echoes renders the request headers a signed call carries in the shapes an upstream or
// proxy might echo them back.
func echoes(c creds) map[string]string {
	h := http.Header{}
	h.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/20261130/us-east-1/monitoring/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=%s", c.keyID, c.signature))
	h.Set("X-Amz-Security-Token", c.token)
	h.Set("X-Amz-Date", "20261130T110000Z")
	var raw strings.Builder
	_ = h.Write(&raw)
	js, _ := json.Marshal(h)
	flat := map[string]string{}
	for k := range h {
		flat[k] = h.Get(k)
	}
	jsFlat, _ := json.Marshal(flat)
	nested, _ := json.Marshal(map[string]string{"message": string(jsFlat)})
	form := url.Values{}
	for k := range h {
		form.Set(k, h.Get(k))
	}
	return map[string]string{
		"raw header lines":    raw.String(),
		"lower-case lines":    strings.ToLower(raw.String()),
		"JSON":                string(js),
		"flat JSON":           string(jsFlat),
		"JSON inside JSON":    string(nested),
		"URL-encoded":         form.Encode(),
		"URL-encoded JSON":    url.QueryEscape(string(jsFlat)),
		"canonical request":   "x-amz-date:20261130T110000Z\nx-amz-security-token:" + c.token + "\n",
		"presigned URL":       "https://x/?X-Amz-Credential=" + url.QueryEscape(c.keyID+"/20261130/us-east-1/monitoring/aws4_request") + "&X-Amz-Security-Token=" + url.QueryEscape(c.token) + "&X-Amz-Signature=" + c.signature,
		"secret in a message": "the secret " + c.secret + " and " + url.QueryEscape(c.secret),
	}
}

func TestRedactsEveryShape(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 2))
	for i := range 20 {
		prefix := []string{"AKIA", "ASIA", "AKID"}[i%3] // AKID: not an AWS prefix, only the known value and Credential= catch it
		c := randomCreds(r, prefix)
		known := NewRedactor()
		known.Add(c.keyID, c.secret, c.token) // what the signer reports
		for shape, text := range echoes(c) {
			got := known.String(text)
			for name, secret := range map[string]string{"key id": c.keyID, "secret": c.secret, "token": c.token, "signature": c.signature} {
				for _, form := range []string{secret, url.QueryEscape(secret), secret[:min(24, len(secret))]} {
					if strings.Contains(got, form) {
						t.Errorf("%s %s: %s leaks (%q)\n%s", prefix, shape, name, form, got)
					}
				}
			}
			if b := known.Bytes([]byte(text)); string(b) != got {
				t.Errorf("%s: Bytes and String differ", shape)
			}
			// Patterns alone (a redactor that was never told) still catch tokens and
			// signatures, and the key id wherever it has AWS's shape or sits in Credential=.
			unknown := (&Redactor{}).String(text)
			for name, secret := range map[string]string{"token": c.token[:24], "signature": c.signature} {
				if strings.Contains(unknown, secret) {
					t.Errorf("%s %s: unknown %s leaks\n%s", prefix, shape, name, unknown)
				}
			}
		}
	}
}

func TestLeavesOrdinaryTextAlone(t *testing.T) {
	r := NewRedactor("s3cr3t-value")
	for _, s := range []string{
		"CloudWatch answered HTTP 400 bad_data: parse error at char 5",
		`{"status":"success","data":["aws.sagemaker.endpoint.name","@resource.host.id"]}`,
		"Signature does not match", "AKIA", "credential provider failed",
	} {
		if got := r.String(s); got != s {
			t.Errorf("%q changed to %q", s, got)
		}
		b := []byte(s)
		if got := r.Bytes(b); &got[0] != &b[0] {
			t.Errorf("%q was copied though nothing was removed", s)
		}
	}
	if got := NewRedactor("1").String("a 1 b"); got != "a 1 b" {
		t.Errorf("a one-character secret shredded text: %q", got)
	}
}

// TestPinnedOutliveRotation: a day of hourly assumed-role rotations (3 secrets each) by
// this and other datasources never evicts pinned secureJsonData; learned secrets are
// capped, the least recently seen go first, and one seen again is kept.
func TestPinnedOutliveRotation(t *testing.T) {
	r := NewRedactor("secure-json-data-secret")
	release := r.Pin("other-instance-secret")
	active := "signer-key-in-use-every-hour"
	for hour := range 48 {
		for ds := range 3 {
			r.Add(fmt.Sprintf("key-%02d-%03d", ds, hour), fmt.Sprintf("secret-%02d-%03d", ds, hour), fmt.Sprintf("token-%02d-%03d", ds, hour))
		}
		r.Add(active) // a long-term key the signer reports on every request
	}
	for _, s := range []string{"secure-json-data-secret", "other-instance-secret", active, "token-02-047"} {
		if got := r.String("x " + s + " y"); got != "x "+secretMark+" y" {
			t.Errorf("%s was forgotten: %q", s, got)
		}
	}
	if got := r.String("key-00-000"); got != "key-00-000" {
		t.Errorf("the least recently seen learned secret is still held: %q", got)
	}
	if n := len(r.learned); n > maxLearned {
		t.Errorf("%d learned secrets held, the cap is %d", n, maxLearned)
	}
	release()
	release() // twice is harmless
	if got := r.String("other-instance-secret"); got != "other-instance-secret" {
		t.Errorf("a released pin is still held: %q", got)
	}
	if got := r.String("secure-json-data-secret"); got != secretMark {
		t.Errorf("releasing one pin dropped another: %q", got)
	}
}

// TestPinsAreCounted: two holders pin one secret; one releasing keeps it for the other.
func TestPinsAreCounted(t *testing.T) {
	r := NewRedactor()
	a, b := r.Pin("shared-secret"), r.Pin("shared-secret")
	a()
	if got := r.String("shared-secret"); got != secretMark {
		t.Errorf("still pinned by b, but %q", got)
	}
	b()
	if got := r.String("shared-secret"); got != "shared-secret" {
		t.Errorf("no pin left, but %q", got)
	}
}

// TestTokenPatternCrossesJSONEscapes: a session token echoed JSON-escaped ("/" as "\/", "+"
// as "\u002b") is removed whole by the pattern, not only up to its first escape.
func TestTokenPatternCrossesJSONEscapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for range 20 {
		c := randomCreds(r, "ASIA")
		tok := "IQoJb3Jp/" + c.token + "+tail"
		for _, form := range []string{strings.ReplaceAll(tok, "/", `\/`), strings.NewReplacer("/", `\/`, "+", `\u002b`).Replace(tok)} {
			text := `{"X-Amz-Security-Token":["` + form + `"]}`
			got := (&Redactor{}).String(text)
			if want := `{"X-Amz-Security-Token":["` + secretMark + `"]}`; got != want {
				t.Errorf("got %s", got)
			}
		}
	}
}

// TestBytesFindsEveryForm: a body that holds a secret only in a form the replacer knows
// (path-escaped, "+" as \u002b, both JSON escapes) is cleaned by Bytes too, not only by String.
func TestBytesFindsEveryForm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 20 {
		c := randomCreds(r, "AKID")
		secret := "Ab+cd/" + c.secret // base64 with both characters that have other forms
		red := NewRedactor(secret)
		for name, form := range map[string]string{
			"path-escaped":      url.PathEscape(secret),
			"plus as \\u002b":   strings.ReplaceAll(secret, "+", `\u002b`),
			"both JSON escapes": strings.NewReplacer("/", `\/`, "+", `\u002b`).Replace(secret),
		} {
			body := `{"status":"success","data":["` + form + `"]}`
			got := string(red.Bytes([]byte(body)))
			if strings.Contains(got, form) || !strings.Contains(got, secretMark) {
				t.Errorf("%s form survives Bytes: %s", name, got)
			}
			if got != red.String(body) {
				t.Errorf("%s: Bytes and String differ", name)
			}
		}
	}
}
