// Command gpx_inferscope_sagemaker is the plugin's backend process; Grafana starts it and
// talks to it over the go-plugin gRPC protocol that datasource.Manage serves.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/plugin"
)

func main() {
	if err := datasource.Manage(models.PluginID, plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error("plugin exited", "error", err.Error())
		os.Exit(1)
	}
}
