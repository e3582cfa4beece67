package models

// PluginID is the plugin id of plugin.json, the one home of it in Go: the backend registers
// under it, and the dashboards and provisioning name it as the data source type.
// names_test.go fails when plugin.json, or the frontend's table of query types, differ.
const PluginID = "inferscope-sagemaker-datasource"
