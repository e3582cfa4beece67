package diagnosis

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/common/model"
)

// envelope is the Prometheus HTTP API answer CloudWatch also uses.
type envelope struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Message   string          `json:"message"` // AWS-style errors (403) carry a message instead
	Data      json.RawMessage `json:"data"`
}

type queryData struct {
	ResultType model.ValueType `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// decodeResult checks the status and envelope of a query answer and returns its data.
func decodeResult(status int, body []byte, want model.ValueType) (json.RawMessage, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		if status/100 != 2 {
			return nil, fmt.Errorf("upstream answered HTTP %d %s with a body that is not JSON", status, http.StatusText(status))
		}
		return nil, fmt.Errorf("upstream answered with invalid JSON: %w", err)
	}
	if status/100 != 2 || env.Status != "success" {
		msg := env.Error
		if msg == "" {
			msg = env.Message
		}
		if env.ErrorType != "" {
			msg = env.ErrorType + ": " + msg
		}
		return nil, fmt.Errorf("upstream answered HTTP %d: %s", status, msg)
	}
	var d queryData
	if err := json.Unmarshal(env.Data, &d); err != nil {
		return nil, fmt.Errorf("upstream answer has no valid data: %w", err)
	}
	if d.ResultType != want {
		return nil, fmt.Errorf("upstream answered a %s where a %s was expected", d.ResultType, want)
	}
	return d.Result, nil
}

// DecodeVector decodes an instant-query answer (status and raw body) into a vector.
func DecodeVector(status int, body []byte) (model.Vector, error) {
	raw, err := decodeResult(status, body, model.ValVector)
	if err != nil {
		return nil, err
	}
	var v model.Vector
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("upstream vector is malformed: %w", err)
	}
	return v, nil
}

// DecodeMatrix decodes a range-query answer (status and raw body) into a matrix.
func DecodeMatrix(status int, body []byte) (model.Matrix, error) {
	raw, err := decodeResult(status, body, model.ValMatrix)
	if err != nil {
		return nil, err
	}
	var m model.Matrix
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("upstream matrix is malformed: %w", err)
	}
	return m, nil
}
