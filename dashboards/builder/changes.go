package builder

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/table"

	"github.com/inferscope/sagemaker-datasource/pkg/dashref"
	"github.com/inferscope/sagemaker-datasource/pkg/querymodel"
)

// The changes query type (CloudTrail's SageMaker and Application Auto Scaling changes) and
// its table's link columns.
const (
	qtChanges     = querymodel.QueryTypeChanges
	fEventURL     = "event_url"
	changesTitle  = "Changes"
	changesNoData = "No changes in the range, or the data source may not call cloudtrail:LookupEvents (see Save & test)"
)

// changesTarget is the changes of the selection, as a table or as annotations, following the
// account filter too.
func changesTarget(refID, format string) *pluginQueryBuilder {
	b := scopedTarget(refID, qtChanges)
	b.q.Format, b.q.Account = format, vAccount
	return b
}

// changesAnnotation marks every change (who, what it set) on the time axis: where a TTFT line
// bends after a deployment, the deployment is there.
func changesAnnotation() *dashboard.AnnotationQueryBuilder {
	return pluginAnnotation(changesTitle, "yellow", changesTarget("Anno", formatAnnotations))
}

// changesTable lists the changes of the selection in the range, newest last, each linking its
// CloudTrail event and its resource's console page.
func changesTable(id uint32, uid string) *table.PanelBuilder {
	order := []string{"time", "action", "resource", "kind", fEndpoint, "who", "what", "account"}
	index := map[string]int{}
	for i, n := range order {
		index[n] = i
	}
	rename := map[string]string{"time": "Time", "action": "Action", "resource": "Resource", "kind": "Kind", fEndpoint: "Endpoint", "who": "Who", "what": "What it set", "account": "Account"}
	return tablePanel(id, changesTitle,
		"SageMaker and Application Auto Scaling changes in the time range, from CloudTrail's event history: who (the caller's ARN) changed which endpoint, "+
			"inference component or scaling policy, and what it set (image, model, instance type, copy count, endpoint config, scaling target; "+
			"\"a → b\" when the range holds the earlier value). A latency or error rise shortly after a change is what the diagnosis leads with. "+
			"Click an action for its CloudTrail event, a resource for its SageMaker console page, an endpoint to filter the dashboard to it."+
			notFiltered("CloudTrail records changes per endpoint and inference component; instances, AZs, engines and models are not part of them.",
				dashref.VarAZ, dashref.VarInstance, dashref.VarFramework, dashref.VarModel)).
		WithTarget(changesTarget("A", formatTable)).Height(8).
		NoValue(changesNoData).
		Transformations([]dashboard.DataTransformerConfig{{Id: "organize", Options: map[string]any{
			"renameByName": rename, "indexByName": index,
		}}}).
		OverrideByRegexp(hiddenColumns(fEventURL, fConsoleURL, fRegion, "eventId"), []dashboard.DynamicConfigValue{prop("custom.hidden", true)}).
		OverrideByName("Action", []dashboard.DynamicConfigValue{linksProp(externalLink("Open the event in CloudTrail", dataField(fEventURL)))}).
		OverrideByName("Resource", []dashboard.DynamicConfigValue{linksProp(consoleLink())}).
		OverrideByName("Endpoint", []dashboard.DynamicConfigValue{linksProp(filterEndpointLink(uid),
			endpointConsole(dataField(fRegion), dataField(fEndpoint)), endpointLogsLink())}).
		OverrideByName("Time", []dashboard.DynamicConfigValue{prop("unit", unitDateTime)})
}
