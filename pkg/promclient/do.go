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

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// do sends one logical call: paced, bounded, retried. Non-2xx answers come
// back as the *Response together with an *APIError.
func (c *Client) do(ctx context.Context, cl class, method string, segments []string, p url.Values) (*Response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	u := c.endpointURL(segments)
	var (
		lastResp *Response
		lastErr  *APIError
	)
	for attempt := 1; ; attempt++ {
		resp, err := c.attempt(ctx, &c.classes[cl], method, u, p)
		if err != nil {
			// Running out of time while retrying: CloudWatch's last answer says more than the deadline.
			if lastErr != nil && ctx.Err() != nil {
				return lastResp, lastErr
			}
			return nil, err
		}
		if resp.Status >= 200 && resp.Status < 300 {
			return resp, nil
		}
		apiErr := parseError(resp)
		apiErr.Attempts = attempt
		lastResp, lastErr = resp, apiErr
		if !apiErr.Retryable() || attempt >= c.retry.MaxAttempts {
			return resp, apiErr
		}
		delay, ok := c.backoff(attempt, resp.Header)
		if !ok {
			return resp, apiErr
		}
		if deadline, has := ctx.Deadline(); has && !c.now().Add(delay).Before(deadline) {
			return resp, apiErr
		}
		if err := c.sleep(ctx, delay); err != nil {
			return resp, apiErr
		}
	}
}

// attempt waits for the rate limiter and a concurrency slot, then sends once.
func (c *Client) attempt(ctx context.Context, tc *trafficClass, method string, u *url.URL, p url.Values) (*Response, error) {
	if err := tc.limiter.Wait(ctx); err != nil {
		if ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			// rate.Limiter refuses up front, with a plain error, when the wait would pass the deadline.
			err = fmt.Errorf("%w: the datasource's request-rate limit would delay this request past its deadline", context.DeadlineExceeded)
		}
		return nil, err
	}
	select {
	case tc.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-tc.slots }()

	uc := *u
	req, err := c.newRequest(ctx, method, &uc, p)
	if err != nil {
		return nil, fmt.Errorf("promclient: building the request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading CloudWatch's answer: %w", err)
	}
	if int64(len(body)) > c.maxBody {
		return nil, backend.DownstreamErrorf("CloudWatch's answer is larger than %d bytes; narrow the query, its time range or its limit", c.maxBody)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
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
