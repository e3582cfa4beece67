package promclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data/utils/jsoniter"
)

// Envelope is what the top level of an answer says besides its data: the Prometheus
// fields, and the AWS-style fields ({"__type","message"}) CloudWatch and AWS front ends
// use for their own errors.
type Envelope struct {
	Status, ErrorType, Error  string
	AWSType, AWSMessage, Code string
	Warnings, Infos           []string
	HasData                   bool
}

// ReadEnvelope is the one reader of Prometheus API answers (panels, diagnosis, health and
// errors all go through it). It reads r in one forward pass; data, when not nil, is
// called with the iterator at the "data" value and must consume exactly that value.
// Errors: *MalformedError when r is not a Prometheus answer, *APIError for an error
// envelope, or whatever data returned.
func ReadEnvelope(r io.Reader, data func(*jsoniter.Iterator) error) (Envelope, error) {
	var env Envelope
	iter, err := jsoniter.Parse(jsoniter.ConfigDefault, r, 64*1024)
	if err != nil {
		return env, syntaxError(err)
	}
	next, err := iter.WhatIsNext()
	if err != nil {
		return env, syntaxError(err)
	}
	if next != jsoniter.ObjectValue {
		return env, Malformed("the response is not a JSON object: expected a Prometheus API response such as {\"status\":\"success\",\"data\":{...}}")
	}
	for {
		key, err := iter.ReadObject()
		if err != nil {
			return env, syntaxError(err)
		}
		if key == "" {
			break
		}
		switch key {
		case "status":
			env.Status, err = ReadNullableString(iter)
		case "errorType":
			env.ErrorType, err = ReadNullableString(iter)
		case "error":
			env.Error, err = ReadNullableString(iter)
		case "__type":
			env.AWSType, err = ReadNullableString(iter)
		case "message", "Message":
			env.AWSMessage, err = ReadNullableString(iter)
		case "code":
			env.Code, err = ReadNullableString(iter)
		case "warnings":
			env.Warnings, err = readStringArray(iter, env.Warnings)
		case "infos":
			env.Infos, err = readStringArray(iter, env.Infos)
		case "data":
			env.HasData = true
			if data != nil {
				err = data(iter)
			} else {
				err = iter.Skip()
			}
		default:
			err = iter.Skip()
		}
		if err != nil {
			return env, wrapReadError(err)
		}
	}
	return env, env.check()
}

// check decides whether a complete envelope is a success.
func (env Envelope) check() error {
	switch {
	case env.Status == "error" || env.Status == "" && env.Error != "":
		return &APIError{Type: env.ErrorType, Message: firstNonEmpty(env.Error, "(no message)")}
	case env.Status == "success":
		if !env.HasData {
			return Malformed("the Prometheus response has status success but no data")
		}
		return nil
	case env.Status == "" && env.AWSMessage != "":
		return &APIError{Type: awsType(env.AWSType), Message: env.AWSMessage}
	case env.Status == "":
		return Malformed("the response has no status field: expected a Prometheus API response such as {\"status\":\"success\",\"data\":{...}}")
	}
	return Malformed("the Prometheus response has an unknown status %q (want success or error)", env.Status)
}

// MalformedError says a body is not a Prometheus API answer (bad JSON or the wrong
// shape). In a 2xx answer it is a transient upstream fault: the call is retried.
type MalformedError struct{ msg string }

func (e *MalformedError) Error() string { return e.msg }

// Malformed builds a *MalformedError; readers of the data value use it for shape errors.
func Malformed(format string, args ...any) error {
	return &MalformedError{msg: fmt.Sprintf(format, args...)}
}

// syntaxError reports malformed JSON. The iterator's message ends in a window of raw body
// bytes whose position depends on buffering (and could hold anything); only the
// description before it is kept.
func syntaxError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, ", error found in #"); i > 0 {
		msg = msg[:i]
	}
	return &MalformedError{msg: "the response is not a valid Prometheus API response (" + msg + ")"}
}

// wrapReadError keeps typed errors (ours and the data reader's) and labels the iterator's.
func wrapReadError(err error) error {
	var (
		me *MalformedError
		ae *APIError
		te *TooLargeError
	)
	if errors.As(err, &me) || errors.As(err, &ae) || errors.As(err, &te) {
		return err
	}
	return syntaxError(err)
}

// ReadNullableString reads a string or null ("").
func ReadNullableString(iter *jsoniter.Iterator) (string, error) {
	next, err := iter.WhatIsNext()
	if err != nil {
		return "", err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return "", err
	}
	return iter.ReadString()
}

func readStringArray(iter *jsoniter.Iterator, into []string) ([]string, error) {
	next, err := iter.WhatIsNext()
	if err != nil {
		return into, err
	}
	if next == jsoniter.NilValue {
		_, err = iter.ReadNil()
		return into, err
	}
	for {
		more, err := iter.ReadArray()
		if err != nil || !more {
			return into, err
		}
		s, err := ReadNullableString(iter)
		if err != nil {
			return into, err
		}
		into = append(into, s)
	}
}

// Data returns a Decode that checks the envelope and unmarshals its data value into v
// with encoding/json (nil v: only check). For small answers: discovery, health, diagnosis.
func Data(v any) Decode {
	return func(r io.Reader) error {
		_, err := ReadEnvelope(r, func(iter *jsoniter.Iterator) error {
			raw, err := iter.SkipAndReturnBytes()
			if err != nil || v == nil {
				return err
			}
			if err := json.Unmarshal(raw, v); err != nil {
				return Malformed("CloudWatch's answer has an unexpected data field (%v)", err)
			}
			return nil
		})
		return err
	}
}

// Raw returns a Decode that keeps the body as it came, for pass-through answers.
func Raw(into *[]byte) Decode {
	return func(r io.Reader) error {
		b, err := io.ReadAll(r)
		*into = b
		return err
	}
}
