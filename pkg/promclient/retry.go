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

// One call with its retries: an attempt through the scheduler, backoff with full jitter on
// throttling, 5xx and cut-off or malformed 2xx bodies, and Retry-After honoured up to
// MaxDelay.

// RetryPolicy bounds retries of throttled (422 throttle, 429) and 5xx answers.
type RetryPolicy struct {
	MaxAttempts int           // total tries including the first; 1 disables retries. Default 4.
	BaseDelay   time.Duration // first backoff ceiling, doubled per retry. Default 250ms.
	MaxDelay    time.Duration // cap on one backoff, and on an honoured Retry-After. Default 4s.
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

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
	var lastErr error // the last retryable answer
	for attempt := 1; ; attempt++ {
		resp, done, err := c.attempt(ctx, cl, method, u, p)
		if err == nil {
			if err = c.read(ctx, resp, done, decode); err == nil {
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

// attempt waits for its turn (rate, concurrency, cheap first; then the account's budget),
// then sends once. A 2xx answer comes back unread with done, which closes it and frees the
// slots held while it is read; any other answer is read into an *APIError and comes back
// closed, for its header.
func (c *Client) attempt(ctx context.Context, cl class, method string, u *url.URL, p url.Values) (resp *http.Response, done func(), err error) {
	cost := requestCost(p)
	release, err := c.classes[cl].acquire(ctx, cost)
	if err != nil {
		return nil, nil, err
	}
	if c.budget != nil {
		shared, err := c.share(ctx, cl, cost)
		if err != nil {
			release()
			return nil, nil, err
		}
		own := release
		release = func() { shared(); own() }
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
