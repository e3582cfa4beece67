package awsemu

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/inferscope/sagemaker-datasource/rig/emulator"
)

// cborIn reads the members of an RPC v2 CBOR request structure.
type cborIn cbor.Map

func decodeCBOR(body []byte) (cborIn, *apiErr) {
	if len(body) == 0 {
		return cborIn{}, nil // an input without members may be sent without a body
	}
	v, err := cbor.Decode(body)
	if err != nil {
		return nil, serializationErr("the request body is not valid CBOR: %v", err)
	}
	m, ok := v.(cbor.Map)
	if !ok {
		return nil, serializationErr("the request body must be a CBOR map, got %T", v)
	}
	return cborIn(m), nil
}

func serializationErr(format string, args ...any) *apiErr {
	return &apiErr{status: http.StatusBadRequest, code: "SerializationException", query: "SerializationException", msg: fmt.Sprintf(format, args...)}
}

func (in cborIn) str(k string) (string, *apiErr) {
	switch v := in[k].(type) {
	case nil, *cbor.Nil:
		return "", nil
	case cbor.String:
		return string(v), nil
	default:
		return "", serializationErr("%s must be a string, got %T", k, v)
	}
}

func (in cborIn) strs(k string) ([]string, *apiErr) {
	switch v := in[k].(type) {
	case nil, *cbor.Nil:
		return nil, nil
	case cbor.List:
		out := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(cbor.String)
			if !ok {
				return nil, serializationErr("%s must be a list of strings, got an item of %T", k, x)
			}
			out = append(out, string(s))
		}
		return out, nil
	default:
		return nil, serializationErr("%s must be a list, got %T", k, v)
	}
}

func (in cborIn) int(k string) (*int64, *apiErr) {
	v, ok := in[k]
	if !ok {
		return nil, nil
	}
	if _, isNil := v.(*cbor.Nil); isNil {
		return nil, nil
	}
	n, err := cbor.AsInt64(v)
	if err != nil {
		return nil, serializationErr("%s must be an integer: %v", k, err)
	}
	return &n, nil
}

func (in cborIn) time(k string) (time.Time, *apiErr) {
	v, ok := in[k]
	if !ok {
		return time.Time{}, nil
	}
	if _, isNil := v.(*cbor.Nil); isNil {
		return time.Time{}, nil
	}
	t, err := cbor.AsTime(v)
	if err != nil {
		return time.Time{}, serializationErr("%s must be a timestamp (tag 1, epoch seconds): %v", k, err)
	}
	return t, nil
}

// cborTime is a timestamp as RPC v2 CBOR writes it: tag 1 around epoch seconds (float64).
func cborTime(t time.Time) cbor.Value {
	return &cbor.Tag{ID: 1, Value: cbor.Float64(float64(t.UnixMilli()) / 1e3)}
}

func cborInt(n int64) cbor.Value {
	if n < 0 {
		return cbor.NegInt(uint64(-(n + 1))) // #nosec G115 -- CBOR stores -1-n, and n < 0 makes it ≥ 0
	}
	return cbor.Uint(uint64(n))
}

func cborFloat(f float64) cbor.Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return &cbor.Nil{}
	}
	return cbor.Float64(f)
}

func cborStrings(ss []string) cbor.List {
	out := make(cbor.List, len(ss))
	for i, s := range ss {
		out[i] = cbor.String(s)
	}
	return out
}

func cborStringMap(m map[string]string) cbor.Map {
	out := cbor.Map{}
	for k, v := range m {
		out[k] = cbor.String(v)
	}
	return out
}

func cborResponse(status int, body cbor.Map, queryErr string) emulator.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/cbor")
	h.Set("Smithy-Protocol", "rpc-v2-cbor")
	if queryErr != "" {
		h.Set("X-Amzn-Query-Error", queryErr)
	}
	return emulator.Response{Status: status, Header: h, Body: cbor.Encode(body)}
}

// cborError renders a modelled CloudWatch error: the shape name in __type, the message
// both as the shape's Message member and as the protocol's generic message, and the
// awsQuery-compatible code the SDK reports for query-compatible services.
func cborError(e *apiErr) emulator.Response {
	fault := "Sender"
	if e.status >= 500 {
		fault = "Receiver"
	}
	q := e.query
	if q == "" {
		q = e.code
	}
	return cborResponse(e.status, cbor.Map{"__type": cbor.String(e.code), "message": cbor.String(e.msg), "Message": cbor.String(e.msg)}, q+";"+fault)
}

// cborFailure renders an emulator failure as CloudWatch does: unmodelled service errors
// carry coral's shape ids with the awsQuery codes (AccessDenied, Throttling, …).
func cborFailure(f emulator.Failure) emulator.Response {
	return cborError(failureErr(f, map[emulator.FailureKind]apiErr{
		emulator.FailAccessDenied: {status: http.StatusForbidden, code: "com.amazon.coral.service#AccessDeniedException", query: "AccessDenied"},
		emulator.FailThrottled:    {status: http.StatusBadRequest, code: "com.amazon.coral.availability#ThrottlingException", query: "Throttling"},
		emulator.FailUnavailable:  {status: http.StatusServiceUnavailable, code: "com.amazon.coral.availability#ServiceUnavailableException", query: "ServiceUnavailable"},
		emulator.FailInternal:     {status: http.StatusInternalServerError, code: "InternalServiceFault", query: "InternalServiceError"},
	}))
}

// failureErr picks the protocol's error for a failure; auth failures keep the verifier's
// type and status.
func failureErr(f emulator.Failure, kinds map[emulator.FailureKind]apiErr) *apiErr {
	if f.Kind == emulator.FailAuth {
		return &apiErr{status: f.Status, code: f.Code, msg: f.Message}
	}
	e := kinds[f.Kind]
	if f.Kind == emulator.FailInternal && f.Status != 0 {
		e.status = f.Status
	}
	e.msg = f.Message
	return &e
}
