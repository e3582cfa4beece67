// Command gpx_inferscope_sagemaker is the plugin's backend process; Grafana starts it and
// talks to it over the go-plugin gRPC protocol that datasource.Manage serves.
package main

import (
	"os"
	"runtime/debug"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
)

// gcPercent is the garbage collector's target when GOGC is not set. An answer is decoded,
// turned into frames, encoded and sent within its request and then dropped, so between
// queries the heap is mostly garbage; 40 % headroom instead of Go's 100 % keeps the
// process's resident size near its live data on a host it shares with Grafana, for some
// more GC work (docs/benchmarks.md, BenchmarkBigAnswerRSS).
const gcPercent = 40

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if err := datasource.Manage(models.PluginID, plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error("plugin exited", "error", err.Error())
		os.Exit(1)
	}
}
