package diagnosis

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/prometheus/common/model"

	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
)

type queryData struct {
	ResultType model.ValueType `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// decodeInto is a promclient.Decode for a query answer of type want, read with promclient's
// envelope reader and unmarshalled into into (a *model.Vector or *model.Matrix).
func decodeInto(want model.ValueType, into any) promclient.Decode {
	return func(r io.Reader) error {
		var d queryData
		if err := promclient.Data(&d)(r); err != nil {
			return err
		}
		if d.ResultType != want {
			return fmt.Errorf("CloudWatch answered a %s where a %s was expected", d.ResultType, want)
		}
		if err := json.Unmarshal(d.Result, into); err != nil {
			return promclient.Malformed("CloudWatch's %s is malformed: %v", want, err)
		}
		return nil
	}
}

// DecodeVector reads an instant-query answer (a 2xx body) into a vector.
func DecodeVector(body io.Reader) (model.Vector, error) {
	var v model.Vector
	return v, decodeInto(model.ValVector, &v)(body)
}

// DecodeMatrix reads a range-query answer (a 2xx body) into a matrix.
func DecodeMatrix(body io.Reader) (model.Matrix, error) {
	var m model.Matrix
	return m, decodeInto(model.ValMatrix, &m)(body)
}
