package budget

import (
	"context"
	"io"
	"net/http"
)

// chunk is how much body is charged at a time when the length is not known up front.
const chunk = 1 << 20

// Transport charges every response body to the request context's account, factor bytes
// per body byte: the whole Content-Length before the body is handed on when the upstream
// states it, else chunk by chunk as it is read. A request without an account gets one of
// its own, released when the body is closed.
func Transport(next http.RoundTripper, b *Budget, factor int64) http.RoundTripper {
	return &transport{next: next, b: b, factor: max(factor, 1)}
}

type transport struct {
	next   http.RoundTripper
	b      *Budget
	factor int64
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	ctx := req.Context()
	acct, own := FromContext(ctx), false
	if acct == nil {
		acct, own = &Account{}, true
	}
	body := &chargedBody{rc: resp.Body, ctx: ctx, acct: acct, own: own, t: t}
	if resp.ContentLength > 0 {
		if err := acct.Charge(ctx, t.b, resp.ContentLength*t.factor); err != nil {
			body.Close()
			return nil, err
		}
		body.prepaid = resp.ContentLength
	}
	resp.Body = body
	return resp, nil
}

// chargedBody charges for bytes before it hands them out.
type chargedBody struct {
	rc       io.ReadCloser
	ctx      context.Context
	acct     *Account
	own      bool
	t        *transport
	prepaid  int64 // body bytes already paid for
	consumed int64
	err      error
}

func (c *chargedBody) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.rc.Read(p)
	c.consumed += int64(n)
	if c.consumed > c.prepaid {
		more := max(c.consumed-c.prepaid, chunk)
		if cerr := c.acct.Charge(c.ctx, c.t.b, more*c.t.factor); cerr != nil {
			c.err = cerr
			return 0, cerr
		}
		c.prepaid += more
	}
	return n, err
}

func (c *chargedBody) Close() error {
	err := c.rc.Close()
	if c.own {
		c.acct.Release()
	}
	return err
}
