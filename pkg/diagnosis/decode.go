package diagnosis

import (
	"fmt"
	"io"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/inferscope/sagemaker-datasource/pkg/promclient"
	"github.com/prometheus/common/model"
)

// Vector is an instant query's answer as the rules read it: its float samples (the rules
// ask for no histograms).
func Vector(a *promclient.Answer) (model.Vector, error) {
	if err := resultType(a, model.ValVector); err != nil {
		return nil, err
	}
	v := make(model.Vector, 0, len(a.Series))
	for _, s := range a.Series {
		for i := range s.V {
			v = append(v, &model.Sample{Metric: metric(s.Labels), Timestamp: model.Time(s.T[i]), Value: model.SampleValue(s.V[i])})
		}
	}
	return v, nil
}

// Matrix is a range query's answer as the rules read it: its float series.
func Matrix(a *promclient.Answer) (model.Matrix, error) {
	if err := resultType(a, model.ValMatrix); err != nil {
		return nil, err
	}
	m := make(model.Matrix, 0, len(a.Series))
	for _, s := range a.Series {
		if len(s.V) == 0 {
			continue
		}
		values := make([]model.SamplePair, len(s.V))
		for i := range s.V {
			values[i] = model.SamplePair{Timestamp: model.Time(s.T[i]), Value: model.SampleValue(s.V[i])}
		}
		m = append(m, &model.SampleStream{Metric: metric(s.Labels), Values: values})
	}
	return m, nil
}

func resultType(a *promclient.Answer, want model.ValueType) error {
	if a.Type != want.String() {
		return fmt.Errorf("CloudWatch answered a %s where a %s was expected", a.Type, want)
	}
	return nil
}

func metric(labels data.Labels) model.Metric {
	m := make(model.Metric, len(labels))
	for k, v := range labels {
		m[model.LabelName(k)] = model.LabelValue(v)
	}
	return m
}

// DecodeVector reads an instant-query answer (a 2xx body) into a vector.
func DecodeVector(body io.Reader) (model.Vector, error) {
	a, err := promclient.ReadAnswer(body, 0)
	if err != nil {
		return nil, err
	}
	return Vector(a)
}

// DecodeMatrix reads a range-query answer (a 2xx body) into a matrix.
func DecodeMatrix(body io.Reader) (model.Matrix, error) {
	a, err := promclient.ReadAnswer(body, 0)
	if err != nil {
		return nil, err
	}
	return Matrix(a)
}
