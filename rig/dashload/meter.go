package dashload

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Meter sits between a data source and the emulator and records every call: its query,
// how long the emulator took, the answer's bytes, and whether it was throttling (429, or
// 422 saying so) or another 422 (the emulator's 20 s execution limit).
type Meter struct {
	mu    sync.Mutex
	calls []Call
}

// Call is one upstream call.
type Call struct {
	Query, Path, Kind     string
	Target                string // an AWS JSON or CBOR API's operation (X-Amz-Target, or the path's)
	Form                  url.Values
	Start                 time.Time
	Took                  time.Duration
	Bytes                 int64
	Status                int
	Throttled, Timeout422 bool
	RangeQuery            bool
}

var throttleWords = regexp.MustCompile(`(?i)throttl|rate exceeded|too many`)

// Serve meters the calls next answers.
func (m *Meter) Serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		form := FormOf(r.URL, raw)
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		c := Call{Query: form.Get("query"), Path: r.URL.Path, Kind: CallKind(r.URL.Path), Target: operation(r), Form: form, Start: time.Now(), RangeQuery: form.Has("step")}
		next.ServeHTTP(rec, r)
		c.Took, c.Bytes, c.Status = time.Since(c.Start), rec.bytes, rec.status
		c.Throttled = rec.status == http.StatusTooManyRequests || (rec.status == http.StatusUnprocessableEntity && throttleWords.Match(rec.head))
		c.Timeout422 = rec.status == http.StatusUnprocessableEntity && !c.Throttled
		m.mu.Lock()
		m.calls = append(m.calls, c)
		m.mu.Unlock()
	})
}

// Since is the calls from the i-th on (Count before a load gives i).
func (m *Meter) Since(i int) []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls[i:])
}

// Count is the number of calls so far.
func (m *Meter) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.calls)
}

type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	head   []byte
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.bytes += int64(len(p))
	if len(r.head) < 512 {
		r.head = append(r.head, p[:min(len(p), 512-len(r.head))]...)
	}
	return r.ResponseWriter.Write(p)
}

// operation is the AWS operation a call names: the X-Amz-Target header of the JSON
// protocols (SageMaker, CloudTrail, Pricing), the path's last element for CloudWatch's CBOR
// protocol, or "" (PromQL).
func operation(r *http.Request) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		return t
	}
	if i := strings.LastIndex(r.URL.Path, "/operation/"); i >= 0 {
		return r.URL.Path[i+len("/operation/"):]
	}
	return ""
}

// CallKind names what an upstream call was for, from its path.
func CallKind(p string) string {
	switch {
	case strings.HasSuffix(p, "/query_range"):
		return "range"
	case strings.HasSuffix(p, "/query"):
		return "instant"
	default:
		return "lookup"
	}
}

// FormOf is a call's parameters, from the query string and a form body alike.
func FormOf(u *url.URL, body []byte) url.Values {
	form, _ := url.ParseQuery(string(body))
	for k, v := range u.Query() {
		form[k] = append(form[k], v...)
	}
	return form
}
