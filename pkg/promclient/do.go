package promclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// do sends one logical call: paced, bounded, retried. A 2xx body goes to decode while it
// arrives; a body cut off or not a valid answer is retried like a 5xx, decode running
// again on the new body.
func (c *Client) do(ctx context.Context, cl class, method string, segments []string, p url.Values, decode Decode) error {
	if decode == nil {
		decode = Data(nil)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	u := c.endpointURL(segments)
	var lastErr error  // the last retryable answer
	var reading func() // closes the body being decoded and frees its slot, even if decode panics
	defer func() {
		if reading != nil {
			reading()
		}
	}()
	for attempt := 1; ; attempt++ {
		resp, done, err := c.attempt(ctx, c.classes[cl], method, u, p)
		if err == nil {
			reading = done
			body := &bodyReader{r: resp.Body, max: c.maxBody}
			err = readError(ctx, resp, body, decode(body))
			reading = nil
			done()
			if err == nil {
				return nil
			}
		}
		retryable := false
		var (
			apiErr  *APIError
			bodyErr *BodyError
		)
		switch {
		case errors.As(err, &apiErr):
			apiErr.Attempts = attempt
			retryable = apiErr.Retryable()
		case errors.As(err, &bodyErr):
			bodyErr.Attempts = attempt
			retryable = true
		case lastErr != nil && ctx.Err() != nil:
			// Out of time while retrying: CloudWatch's last answer says more than the deadline.
			return lastErr
		default:
			return err
		}
		if !retryable || attempt >= c.retry.MaxAttempts {
			return err
		}
		lastErr = err
		var header http.Header // Retry-After, when CloudWatch answered
		if resp != nil {
			header = resp.Header
		}
		delay, ok := c.backoff(attempt, header)
		if !ok {
			return err
		}
		if deadline, has := ctx.Deadline(); has && !c.now().Add(delay).Before(deadline) {
			return err
		}
		if c.sleep(ctx, delay) != nil {
			return err
		}
	}
}

// attempt waits for its turn (rate, concurrency, cheap first), then sends once. A 2xx
// answer comes back unread with done, which closes it and frees the slot held while it
// is read; any other answer is read into an *APIError and comes back closed, for its header.
func (c *Client) attempt(ctx context.Context, sched *scheduler, method string, u *url.URL, p url.Values) (resp *http.Response, done func(), err error) {
	release, err := sched.acquire(ctx, requestCost(p))
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	uc := *u
	req, err := c.newRequest(ctx, method, &uc, p)
	if err != nil {
		return nil, nil, fmt.Errorf("promclient: building the request: %w", err)
	}
	if resp, err = c.http.Do(req); err != nil {
		return nil, nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, func() { resp.Body.Close(); release() }, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && len(body) == 0 {
		return resp, nil, &BodyError{Status: resp.StatusCode, Cut: true, Err: err}
	}
	return resp, nil, parseError(resp.StatusCode, resp.Header, body)
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

// backoff is capped exponential backoff with full jitter, unless the server
// said how long to wait; ok is false when it asks for more than MaxDelay.
func (c *Client) backoff(attempt int, h http.Header) (time.Duration, bool) {
	if d, ok := retryAfter(h.Get("Retry-After"), c.now()); ok {
		return d, d <= c.retry.MaxDelay
	}
	ceiling := c.retry.MaxDelay
	if shift := attempt - 1; shift < 32 {
		if d := c.retry.BaseDelay << shift; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(c.jitter() * float64(ceiling)), true
}

// retryAfter parses Retry-After as delta seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(0, t.Sub(now)), true
}
