package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/rig/itest/gobuild"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// pluginProcess is the plugin binary running as a child process, reached the way Grafana
// reaches it: go-plugin's handshake (magic cookie grafana_plugin_type=datasource, protocol
// version 2) over stdout, then gRPC on the address the plugin announced.
type pluginProcess struct {
	pid         int
	client      *goplugin.Client
	data        grpcplugin.DataClient
	diagnostics grpcplugin.DiagnosticsClient
	resource    grpcplugin.ResourceClient
}

// buildPlugin compiles the plugin's main package into dir, with extra go build flags.
func buildPlugin(t *testing.T, dir string, flags ...string) string {
	return gobuild.Build(t, "github.com/inferscope/sagemaker-datasource/pkg", dir, "gpx_inferscope_sagemaker", flags...)
}

// startPlugin launches bin with the environment Grafana gives a backend plugin and returns
// gRPC clients for the three services the datasource serves.
func startPlugin(t *testing.T, bin string, env ...string) *pluginProcess {
	t.Helper()
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
	t.Cleanup(func() {
		client.Kill()
		if t.Failed() {
			t.Logf("plugin process log:\n%s", logs.String())
		}
	})
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("go-plugin handshake with %s: %v", bin, err)
	}
	p := &pluginProcess{client: client, pid: cmd.Process.Pid}
	p.data = dispense[grpcplugin.DataClient](t, rpc, "data")
	p.diagnostics = dispense[grpcplugin.DiagnosticsClient](t, rpc, "diagnostics")
	p.resource = dispense[grpcplugin.ResourceClient](t, rpc, "resource")
	return p
}

func dispense[T any](t *testing.T, rpc goplugin.ClientProtocol, name string) T {
	t.Helper()
	raw, err := rpc.Dispense(name)
	if err != nil {
		t.Fatalf("dispensing %q: %v", name, err)
	}
	c, ok := raw.(T)
	if !ok {
		t.Fatalf("plugin %q dispensed %T", name, raw)
	}
	return c
}

func (p *pluginProcess) CheckHealth(ctx context.Context, pc backend.PluginContext) (*backend.CheckHealthResult, error) {
	resp, err := p.diagnostics.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: backend.ToProto().PluginContext(pc)})
	if err != nil {
		return nil, err
	}
	return backend.FromProto().CheckHealthResponse(resp), nil
}

func (p *pluginProcess) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp, err := p.data.QueryData(ctx, backend.ToProto().QueryDataRequest(req))
	if err != nil {
		return nil, err
	}
	return backend.FromProto().QueryDataResponse(resp)
}

// CallResource collects the streamed response parts into one response.
func (p *pluginProcess) CallResource(ctx context.Context, req *backend.CallResourceRequest) (*backend.CallResourceResponse, error) {
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

// syncBuffer collects the plugin's log lines (written from go-plugin's goroutines) so a
// failing test can show them.
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

// startWithStack builds the plugin (with extra go build flags), starts an emulator stack with
// 30 minutes of history and the plugin, and returns them with the data source's context.
func startWithStack(ctx context.Context, t *testing.T, flags ...string) (*pluginProcess, *stack.Stack, backend.PluginContext) {
	t.Helper()
	bin := buildPlugin(t, t.TempDir(), flags...)
	st, err := stack.Start(ctx, stack.Options{History: 30 * time.Minute})
	if err != nil {
		t.Fatalf("starting the emulator stack: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return startPlugin(t, bin), st, datasourceContext(st)
}

// datasourceContext is the plugin context Grafana sends for a data source provisioned
// against the stack.
func datasourceContext(st *stack.Stack) backend.PluginContext {
	jsonData, secure := st.DataSourceSettings()
	jd, _ := json.Marshal(jsonData)
	return backend.PluginContext{
		OrgID:    1,
		PluginID: models.PluginID,
		User:     &backend.User{Login: "admin", Role: "Admin"},
		DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
			ID: 1, UID: "sagemaker", Name: "SageMaker", Type: models.PluginID,
			JSONData:                jd,
			DecryptedSecureJSONData: secure,
			Updated:                 time.Now(),
		},
		GrafanaConfig: backend.NewGrafanaCfg(map[string]string{"GF_CONCURRENT_QUERY_COUNT": "4"}),
	}
}
