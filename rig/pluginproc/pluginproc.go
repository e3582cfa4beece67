// Package pluginproc runs the built plugin binary as a child process and speaks the plugin
// protocol to it the way Grafana does: go-plugin's handshake (magic cookie
// grafana_plugin_type=datasource, protocol version 2) over stdout, then gRPC on the address
// the plugin announced. The process tests (rig/itest/process) and the browser tests' loopback
// host (rig/cmd/pluginhost) share it.
package pluginproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// Package is the import path of the plugin's main package; BinaryName is the executable
// name plugin.json announces.
const (
	Package    = "github.com/inferscope/sagemaker-datasource/pkg"
	BinaryName = "gpx_inferscope_sagemaker"
)

// Process is the plugin binary running as a child process, with gRPC clients for the three
// services the datasource serves.
type Process struct {
	PID         int
	client      *goplugin.Client
	logs        *syncBuffer
	data        grpcplugin.DataClient
	diagnostics grpcplugin.DiagnosticsClient
	resource    grpcplugin.ResourceClient
}

// Start launches bin with the environment Grafana gives a backend plugin (plus env) and
// completes the handshake. Close ends the process.
func Start(bin string, env ...string) (*Process, error) {
	cmd := exec.Command(bin)
	logs := &syncBuffer{}
	// Grafana passes its own settings to plugins through the environment; the plugin must
	// not depend on anything else of the host's.
	cmd.Env = append([]string{"GF_VERSION=12.2.0", "GF_EDITION=oss", "GF_PLUGIN_APP_URL=http://127.0.0.1:3000/"}, env...)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{
			grpcplugin.ProtocolVersion: {
				"data":        &grpcplugin.DataGRPCPlugin{},
				"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
				"resource":    &grpcplugin.ResourceGRPCPlugin{},
			},
		},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		SkipHostEnv:      true,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logs, Level: hclog.Info}),
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, fmt.Errorf("go-plugin handshake with %s: %w\n%s", bin, err, logs.String())
	}
	p := &Process{client: client, logs: logs, PID: cmd.Process.Pid}
	var errs [3]error
	p.data, errs[0] = dispense[grpcplugin.DataClient](rpc, "data")
	p.diagnostics, errs[1] = dispense[grpcplugin.DiagnosticsClient](rpc, "diagnostics")
	p.resource, errs[2] = dispense[grpcplugin.ResourceClient](rpc, "resource")
	if err := errors.Join(errs[:]...); err != nil {
		client.Kill()
		return nil, err
	}
	return p, nil
}

func dispense[T any](rpc goplugin.ClientProtocol, name string) (T, error) {
	var zero T
	raw, err := rpc.Dispense(name)
	if err != nil {
		return zero, fmt.Errorf("dispensing %q: %w", name, err)
	}
	c, ok := raw.(T)
	if !ok {
		return zero, fmt.Errorf("plugin %q dispensed %T", name, raw)
	}
	return c, nil
}

// Close ends the plugin process.
func (p *Process) Close() { p.client.Kill() }

// Logs is what the plugin logged so far (info and above).
func (p *Process) Logs() string { return p.logs.String() }

func (p *Process) CheckHealth(ctx context.Context, pc backend.PluginContext) (*backend.CheckHealthResult, error) {
	resp, err := p.diagnostics.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: backend.ToProto().PluginContext(pc)})
	if err != nil {
		return nil, err
	}
	return backend.FromProto().CheckHealthResponse(resp), nil
}

func (p *Process) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp, err := p.data.QueryData(ctx, backend.ToProto().QueryDataRequest(req))
	if err != nil {
		return nil, err
	}
	return backend.FromProto().QueryDataResponse(resp)
}

// CallResource collects the streamed response parts into one response.
func (p *Process) CallResource(ctx context.Context, req *backend.CallResourceRequest) (*backend.CallResourceResponse, error) {
	stream, err := p.resource.CallResource(ctx, backend.ToProto().CallResourceRequest(req))
	if err != nil {
		return nil, err
	}
	var out *backend.CallResourceResponse
	for {
		part, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		r := backend.FromProto().CallResourceResponse(part)
		if out == nil {
			out = r
			continue
		}
		out.Body = append(out.Body, r.Body...)
	}
	if out == nil {
		return nil, errors.New("plugin sent no resource response")
	}
	return out, nil
}

// Bound is the process serving as one data source: every call carries pc, as Grafana's
// calls carry the data source's context. It is a backend.QueryDataHandler and
// backend.CallResourceHandler, so code written for an in-process data source drives it.
type Bound struct {
	p  *Process
	pc backend.PluginContext
}

// For binds the process to the data source (and org, user) of pc.
func (p *Process) For(pc backend.PluginContext) Bound { return Bound{p: p, pc: pc} }

func (b Bound) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	r := *req
	r.PluginContext = b.pc
	return b.p.QueryData(ctx, &r)
}

func (b Bound) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	r := *req
	r.PluginContext = b.pc
	resp, err := b.p.CallResource(ctx, &r)
	if err != nil {
		return err
	}
	return sender.Send(resp)
}

// syncBuffer collects the plugin's log lines (written from go-plugin's goroutines).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// StackSettings are the settings of a data source (id, uid) provisioned against the stack:
// static keys, the stack's region and its URL as the endpoint.
func StackSettings(st *stack.Stack, id int64, uid string) *backend.DataSourceInstanceSettings {
	jsonData, secure := st.DataSourceSettings()
	jd, _ := json.Marshal(jsonData)
	return &backend.DataSourceInstanceSettings{
		ID: id, UID: uid, Name: "SageMaker", Type: models.PluginID,
		JSONData:                jd,
		DecryptedSecureJSONData: secure,
		Updated:                 time.Now(),
	}
}

// Context is the plugin context Grafana sends with a call for the data source ds.
func Context(ds *backend.DataSourceInstanceSettings) backend.PluginContext {
	return backend.PluginContext{
		OrgID:                      1,
		PluginID:                   models.PluginID,
		User:                       &backend.User{Login: "admin", Role: "Admin"},
		DataSourceInstanceSettings: ds,
		GrafanaConfig:              backend.NewGrafanaCfg(map[string]string{"GF_CONCURRENT_QUERY_COUNT": "4"}),
	}
}
