package promclient

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// DecodeAnswer reads every attempt afresh: a retried answer holds the second attempt only.
func TestDecodeAnswerStartsOverOnEachAttempt(t *testing.T) {
	good := []byte(`{"status":"success","data":{"resultType":"matrix","result":[
		{"metric":{"job":"a"},"values":[[1,"1"],[2,"2"]]},
		{"metric":{"job":"b"},"values":[[1,"3"],[2,"4"]]},
		{"metric":{"job":"c"},"values":[[1,"5"],[3,"6"]]}]}}`)
	var a Answer
	if err := DecodeAnswer(&a)(io.MultiReader(bytes.NewReader(good[:len(good)/2]), iotest.ErrReader(errors.New("connection reset")))); err == nil {
		t.Fatal("a cut body decoded")
	}
	if len(a.Series) != 0 {
		t.Fatalf("a failed attempt left %d series", len(a.Series))
	}
	if err := DecodeAnswer(&a)(bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if len(a.Series) != 3 || a.Points() != 6 {
		t.Fatalf("after a retry: %d series, %d points; want 3 and 6", len(a.Series), a.Points())
	}
}
