package plugin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/proxy"
)

// socksProxy is a loopback SOCKS5 proxy (RFC 1928, CONNECT, no authentication asked) that
// relays each connection and notes where it was asked to connect: what Grafana's secure
// socks proxy is to a data source, without its TLS (allow_insecure).
type socksProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	targets []string
}

func startSocks(t *testing.T) *socksProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &socksProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() { // the test's server loop; pkg/ code starts goroutines only through pkg/fanout
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *socksProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *socksProxy) serve(c net.Conn) {
	defer c.Close()
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(c, hdr); err != nil || hdr[0] != 5 {
		return
	}
	if _, err := io.ReadFull(c, make([]byte, hdr[1])); err != nil { // the offered methods
		return
	}
	if _, err := c.Write([]byte{5, 0}); err != nil { // no authentication
		return
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(c, req); err != nil || req[1] != 1 {
		return
	}
	var host string
	switch req[3] {
	case 1:
		b := make([]byte, 4)
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		host = net.IP(b).String()
	case 3:
		n := make([]byte, 1)
		if _, err := io.ReadFull(c, n); err != nil {
			return
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		host = string(b)
	default:
		return
	}
	port := make([]byte, 2)
	if _, err := io.ReadFull(c, port); err != nil {
		return
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port))))
	p.mu.Lock()
	p.targets = append(p.targets, target)
	p.mu.Unlock()
	up, err := net.Dial("tcp", target)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	if _, err := c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// TestSecureSocksProxy: with Grafana's secure socks proxy on (grafana.ini) and enabled on the
// data source, a panel's query reaches CloudWatch through the proxy; with it off on the data
// source, the proxy sees nothing.
func TestSecureSocksProxy(t *testing.T) {
	for _, tt := range []struct {
		name    string
		enabled bool
	}{{"enabled on the data source", true}, {"not enabled on the data source", false}} {
		t.Run(tt.name, func(t *testing.T) {
			f := (&fakeCloudWatch{region: "us-east-1"}).start(t)
			socks := startSocks(t)
			s := f.settings("us-east-1", fakeAccessKey, fakeSecretKey)
			var jd map[string]any
			if err := json.Unmarshal(s.JSONData, &jd); err != nil {
				t.Fatal(err)
			}
			jd["enableSecureSocksProxy"] = tt.enabled
			s.JSONData, _ = json.Marshal(jd)
			ctx := backend.WithGrafanaConfig(context.Background(), backend.NewGrafanaCfg(map[string]string{
				proxy.PluginSecureSocksProxyEnabled:       "true",
				proxy.PluginSecureSocksProxyProxyAddress:  socks.ln.Addr().String(),
				proxy.PluginSecureSocksProxyAllowInsecure: "true",
			}))
			d := newRealDatasource(t, ctx, s)
			if d.setupErr != nil {
				t.Fatal(d.setupErr)
			}
			resp, err := d.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{
				dataQuery("A", `{"expr":"1+1","instant":true,"range":false}`),
			}})
			if err != nil {
				t.Fatal(err)
			}
			if e := resp.Responses["A"].Error; e != nil {
				t.Fatalf("query failed: %v", e)
			}
			if f.requests.Load() == 0 {
				t.Fatal("the query never reached the fake CloudWatch")
			}
			upstream := f.url[len("http://"):]
			seen := socks.seen()
			through := len(seen) > 0 && seen[0] == upstream
			if through != tt.enabled {
				t.Errorf("proxy saw %v (CloudWatch at %s); want the query through it: %v", seen, upstream, tt.enabled)
			}
			// The AWS API client (alarms, here unanswered by the fake) has its own transport:
			// its connection goes through the proxy too.
			if _, err := d.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{
				dataQuery("B", `{"queryType":"alarms"}`),
			}}); err != nil {
				t.Fatal(err)
			}
			if more := len(socks.seen()) > len(seen); more != tt.enabled {
				t.Errorf("the alarms query's connection through the proxy: %v, want %v (proxy saw %v)", more, tt.enabled, socks.seen())
			}
		})
	}
}

// A proxy username that is not a string is refused with the key and the fix, not a panic.
func TestSecureSocksProxyUsernameType(t *testing.T) {
	s := testSettings(`{"authType":"keys","defaultRegion":"us-east-1","endpoint":"http://127.0.0.1:9","enableSecureSocksProxy":true,"secureSocksProxyUsername":5}`)
	ctx := backend.WithGrafanaConfig(context.Background(), backend.NewGrafanaCfg(map[string]string{
		proxy.PluginSecureSocksProxyEnabled: "true", proxy.PluginSecureSocksProxyAllowInsecure: "true",
	}))
	d := newRealDatasource(t, ctx, s)
	if d.setupErr == nil || !strings.Contains(d.setupErr.Error(), "secureSocksProxyUsername must be a string") {
		t.Errorf("setup error %v, want one naming secureSocksProxyUsername", d.setupErr)
	}
}
