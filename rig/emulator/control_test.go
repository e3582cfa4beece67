package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// echoPlane routes /cp/<op> as service "svc" and answers with what reached it.
type echoPlane struct{}

func (echoPlane) Route(r *http.Request) (Call, bool) {
	op, ok := strings.CutPrefix(r.URL.Path, "/cp/")
	return Call{Service: "svc", Action: "svc:" + op, Operation: op}, ok
}

func (echoPlane) Serve(_ context.Context, c Call, body []byte, _ Querier) Response {
	return Response{Status: http.StatusOK, Body: []byte(c.Operation + ":" + string(body))}
}

func (echoPlane) Fail(c Call, f Failure) Response {
	return Response{Status: 400, Body: []byte(fmt.Sprintf("%s failed: kind %d: %s", c.Operation, f.Kind, f.Message))}
}

func (echoPlane) Actions() []string { return []string{"svc:Read", "svc:Write"} }

func TestControlPlaneCallsGetDenyAndFaults(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		path     string
		wantCode int
		want     string
	}{
		{"served", Config{ControlPlane: echoPlane{}}, "/cp/Read", 200, "Read:body"},
		{"denied", Config{ControlPlane: echoPlane{}, Deny: []string{"svc:Read"}}, "/cp/Read", 400,
			fmt.Sprintf("Read failed: kind %d: User: arn:aws:iam::123456789012:user/emulator is not authorized to perform: svc:Read", FailAccessDenied)},
		{"other action not denied", Config{ControlPlane: echoPlane{}, Deny: []string{"svc:Read"}}, "/cp/Write", 200, "Write:body"},
		{"error rate", Config{ControlPlane: echoPlane{}, Faults: Faults{ErrorRate: 1}}, "/cp/Read", 400, fmt.Sprintf("kind %d", FailUnavailable)},
		{"PromQL unaffected", Config{ControlPlane: echoPlane{}, Deny: []string{"svc:Read"}}, "/api/v1/query?query=vector(1)", 200, `"status":"success"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.cfg)
			resp, err := http.Post(ts.URL+tt.path, "text/plain", strings.NewReader("body"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(b), tt.want) {
				t.Errorf("%d %s, want %d containing %q", resp.StatusCode, b, tt.wantCode, tt.want)
			}
		})
	}
}

func TestDenyNamesOnlyServedActions(t *testing.T) {
	db := openDB(t)
	for _, tc := range []struct {
		cfg   Config
		known []string // the actions the error offers instead
	}{
		{Config{Deny: []string{"svc:Read"}}, nil},
		{Config{ControlPlane: echoPlane{}, Deny: []string{"svc:Delete"}}, echoPlane{}.Actions()},
	} {
		_, err := New(tc.cfg, db)
		var de *DenyError
		if !errors.As(err, &de) || de.Action != tc.cfg.Deny[0] || !slices.Equal(de.Known, tc.known) {
			t.Errorf("Deny %v with control plane %v: %#v, want a DenyError for %s offering %v", tc.cfg.Deny, tc.cfg.ControlPlane, err, tc.cfg.Deny[0], tc.known)
		}
	}
}
