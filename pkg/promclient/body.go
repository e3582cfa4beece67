package promclient

import (
	"context"
	"errors"
	"io"
	"net/http"
)

// Reading an answer's body: a 2xx body goes live to the caller's Decode, bounded by
// MaxResponseBytes; any other becomes a typed error (errors.go) from its envelope.

// read hands a 2xx body to decode and types the outcome (readError); done closes the body
// and frees its slot even when decode panics.
func (c *Client) read(ctx context.Context, resp *http.Response, done func(), decode Decode) error {
	defer done()
	body := &bodyReader{r: resp.Body, max: c.maxBody}
	return readError(ctx, resp, body, decode(body))
}

// readError types what decoding a 2xx body gave: a broken or oversized read before the
// decoder's own error (the connection, not the content, is at fault), a malformed answer
// as a retryable *BodyError, and an *APIError in the envelope with the answer's status.
func readError(ctx context.Context, resp *http.Response, body *bodyReader, err error) error {
	switch {
	case body.err != nil && ctx.Err() != nil:
		return ctx.Err()
	case errors.As(body.err, new(*TooLargeError)):
		return body.err
	case body.err != nil:
		return &BodyError{Status: resp.StatusCode, Bytes: body.n, Cut: true, Err: body.err}
	case err == nil:
		// Let the connection be reused when the reader stopped just short of the end.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		return nil
	}
	var (
		apiErr *APIError
		me     *MalformedError
	)
	switch {
	case errors.As(err, &apiErr):
		apiErr.Status, apiErr.RequestID = resp.StatusCode, resp.Header.Get("x-amzn-RequestId")
		apiErr.Cause = classifyCause(apiErr)
	case errors.As(err, &me):
		return &BodyError{Status: resp.StatusCode, Bytes: body.n, Err: err}
	}
	return err
}

// bodyReader counts a 2xx body, refuses bytes beyond max and remembers the first read
// failure, so a decoder's error can be traced to the connection rather than the content.
type bodyReader struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if rest := b.max + 1 - b.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		b.err = &TooLargeError{Limit: b.max, Unit: "bytes"}
		return 0, b.err
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}
