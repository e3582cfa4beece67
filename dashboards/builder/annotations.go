package builder

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// Events every time-series panel of the three dashboards marks on its time axis, all from the
// dashboard's data source variable: alarm transitions and endpoint updates/deployments from
// the alarmHistory and inventory query types, who changed what from the changes query type, scaling, ICE and cold starts from the
// control-plane series the Reliability panels read. Each follows the endpoint and IC filters
// where its source carries them.
func annotations() []cog.Builder[dashboard.AnnotationQuery] {
	by := func(ls ...string) []string { return ls }
	scaling := sumBy(by(lIC, sc.LabelScalingDirection), "count_over_time("+scalingSel(sc.ScaleOut+"|"+sc.ScaleIn)+"[$__interval])")
	ice := sumBy(by(lEP, sc.LabelEventInstanceType, sc.LabelEventAZ), "sum_over_time("+iceEvents()+"[$__interval])")
	coldStarts := maxBy(by(lIC, lCID), "max_over_time("+coldStartEvent(sc.ColdStartDuration)+"[$__interval])")
	return []cog.Builder[dashboard.AnnotationQuery]{
		pluginAnnotation("Alarm transitions", "red", historyTarget("Anno", formatAnnotations)),
		pluginAnnotation("Endpoint updates and deployments", "blue", inventoryTarget("Anno", formatAnnotations)),
		changesAnnotation(),
		promAnnotation("Scale-out / scale-in", "green", scaling,
			"{{"+sc.LabelScalingDirection+"}} {{"+lIC+"}}", lIC, sc.LabelScalingDirection),
		promAnnotation("Insufficient capacity (ICE)", "orange", ice,
			"ICE {{"+sc.LabelEventInstanceType+"}} in {{"+sc.LabelEventAZ+"}}", lEP, sc.LabelEventInstanceType, sc.LabelEventAZ),
		promAnnotation("Cold starts", "purple", coldStarts,
			"Cold start {{"+lIC+"}} · {{"+lCID+"}}", lIC),
	}
}

// pluginAnnotation is an annotation whose events the backend frames (time, title, text, tags).
func pluginAnnotation(name, color string, target cog.Builder[variants.Dataquery]) *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().Name(name).Datasource(dsRef()).Enable(true).Hide(false).
		IconColor(color).Target(target)
}

// promAnnotation marks every run of samples above zero of a PromQL range query (the
// frontend's annotation support), titled from the series' labels.
func promAnnotation(name, color, expr, title string, tagKeys ...string) *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().Name(name).Datasource(dsRef()).Enable(true).Hide(false).
		IconColor(color).Target(promRange("Anno", expr, "")).
		TitleFormat(title).TagKeys(strings.Join(tagKeys, ",")).Step("60s")
}
