package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/proxy"
)

// proxyTransport reads the proxy settings Grafana gives the data source (the SDK's HTTP
// client options: the secure socks proxy when both Grafana and the data source enable it)
// and returns what makes each client's transport: a clone of http.DefaultTransport, which
// also honours HTTPS_PROXY and NO_PROXY, dialling through the socks proxy when it is on.
// Only the proxy is taken from the options: the clients keep their own timeouts, TLS and
// redirect rules (signed requests go nowhere but the region's endpoint).
func proxyTransport(ctx context.Context, settings backend.DataSourceInstanceSettings) (func() (*http.Transport, error), error) {
	// The SDK asserts this key is a string, and would panic on anything else.
	var jd struct {
		Username any `json:"secureSocksProxyUsername"`
	}
	if json.Unmarshal(settings.JSONData, &jd) == nil && jd.Username != nil {
		if _, ok := jd.Username.(string); !ok {
			return nil, backend.DownstreamError(errors.New("jsonData.secureSocksProxyUsername must be a string: quote it, or remove it to use the data source's uid"))
		}
	}
	opts, err := settings.HTTPClientOptions(ctx)
	if err != nil {
		return nil, backend.DownstreamError(fmt.Errorf("reading Grafana's proxy settings for the data source: %w; check the secure socks proxy settings in grafana.ini and on the data source", err))
	}
	socks := proxy.New(opts.ProxyOptions)
	return func() (*http.Transport, error) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if err := socks.ConfigureSecureSocksHTTPProxy(t); err != nil {
			return nil, fmt.Errorf("secure socks proxy: %w", err)
		}
		return t, nil
	}, nil
}
