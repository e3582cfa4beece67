package awsemu

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// STS in the Query protocol: POST / with a form body Action=GetCallerIdentity&Version=2011-06-15,
// signed for "sts", answered in XML. It names the fleet's account (the emulator verifies one
// key, whose owner stands in as a user of that account), so a plugin learns the account whose
// CloudWatch limits its calls spend. IAM cannot deny GetCallerIdentity on AWS (a VPC
// endpoint policy can); Config.Deny can, to test that path.
const (
	svcSTS     = "sts"
	stsVersion = "2011-06-15"
	stsXMLNS   = "https://sts.amazonaws.com/doc/" + stsVersion + "/"
	// stsPeekBytes bounds how much of a form body routing reads for its Action; a Query
	// call's form is a few dozen bytes.
	stsPeekBytes = 4 << 10
)

var stsOps = []string{"GetCallerIdentity"}

// routeSTS recognises a Query-protocol call, a form POST to / without X-Amz-Target (the
// JSON protocols' mark), and reads its Action, putting the body back for the signature check.
func routeSTS(r *http.Request) (emulator.Call, bool) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("X-Amz-Target") != "" || ct != "application/x-www-form-urlencoded" {
		return emulator.Call{}, false
	}
	peek, _ := io.ReadAll(io.LimitReader(r.Body, stsPeekBytes))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(peek), r.Body), r.Body}
	form, _ := url.ParseQuery(string(peek))
	op := form.Get("Action")
	return emulator.Call{Service: svcSTS, Action: svcSTS + ":" + op, Operation: op}, true
}

// readCloser reads the peeked bytes and the rest, and closes the original body.
type readCloser struct {
	io.Reader
	io.Closer
}

func (s *Server) serveSTS(c emulator.Call, body []byte) emulator.Response {
	form, err := url.ParseQuery(string(body))
	switch {
	case err != nil:
		return stsError(&apiErr{status: http.StatusBadRequest, code: "MalformedQueryString", msg: "the form body cannot be parsed: " + err.Error()})
	case c.Operation == "":
		return stsError(&apiErr{status: http.StatusBadRequest, code: "MissingAction", msg: "the form has no Action; send Action=GetCallerIdentity&Version=" + stsVersion})
	case c.Operation != "GetCallerIdentity" || form.Get("Version") != stsVersion:
		return stsError(&apiErr{status: http.StatusBadRequest, code: "InvalidAction", msg: fmt.Sprintf(
			"Could not find operation %s for version %s; the emulator serves STS %s of version %s", c.Operation, form.Get("Version"), strings.Join(stsOps, ", "), stsVersion)})
	}
	account := s.cfg.Fleet.Account
	out := struct {
		XMLName xml.Name `xml:"GetCallerIdentityResponse"`
		XMLNS   string   `xml:"xmlns,attr"`
		Result  struct {
			Arn     string
			UserID  string `xml:"UserId"`
			Account string
		} `xml:"GetCallerIdentityResult"`
		RequestID string `xml:"ResponseMetadata>RequestId"`
	}{XMLNS: stsXMLNS, RequestID: sigv4verify.NewRequestID()}
	out.Result.Arn = "arn:aws:iam::" + account + ":user/emulator"
	out.Result.UserID = "AIDA" + account + "EMULATOR"
	out.Result.Account = account
	return stsXML(http.StatusOK, out.RequestID, out)
}

// stsError renders an error as the Query protocol does: ErrorResponse/Error with Type
// (Sender for the caller's fault, Receiver for the service's), Code and Message.
func stsError(e *apiErr) emulator.Response {
	kind := "Sender"
	if e.status >= 500 {
		kind = "Receiver"
	}
	type stsErr struct {
		Type, Code, Message string
	}
	out := struct {
		XMLName   xml.Name `xml:"ErrorResponse"`
		XMLNS     string   `xml:"xmlns,attr"`
		Error     stsErr
		RequestID string `xml:"RequestId"`
	}{XMLNS: stsXMLNS, Error: stsErr{kind, e.code, e.msg}, RequestID: sigv4verify.NewRequestID()}
	return stsXML(e.status, out.RequestID, out)
}

// stsFailure renders an emulator failure as STS does; signature failures take STS's codes.
func stsFailure(f emulator.Failure) emulator.Response {
	e := failureErr(f, map[emulator.FailureKind]apiErr{
		emulator.FailAccessDenied: {status: http.StatusForbidden, code: "AccessDenied"},
		emulator.FailThrottled:    {status: http.StatusBadRequest, code: "Throttling"},
		emulator.FailUnavailable:  {status: http.StatusServiceUnavailable, code: "ServiceUnavailable"},
		emulator.FailInternal:     {status: http.StatusInternalServerError, code: "InternalFailure"},
	})
	if f.Kind == emulator.FailAuth {
		switch e.code {
		case sigv4verify.TypeUnrecognized:
			e.code = "InvalidClientTokenId"
		case sigv4verify.TypeInvalidSignature:
			e.code = "SignatureDoesNotMatch"
		default: // MissingAuthenticationToken, IncompleteSignature: the Query protocol drops "Exception"
			e.code = strings.TrimSuffix(e.code, "Exception")
		}
	}
	return stsError(e)
}

func stsXML(status int, requestID string, v any) emulator.Response {
	b, _ := xml.Marshal(v) // strings only: it cannot fail
	h := http.Header{}
	h.Set("Content-Type", "text/xml")
	h.Set("x-amzn-RequestId", requestID)
	return emulator.Response{Status: status, Header: h, Body: append([]byte(xml.Header), b...)}
}
