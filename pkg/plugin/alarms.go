package plugin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
	"github.com/inferscope/sagemaker-datasource/pkg/health"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

// maxContributorCalls bounds the DescribeAlarmContributors calls of one alarms query (one per
// multi-series alarm in ALARM), and how many run at once.
const (
	maxContributorCalls  = 50
	contributorsAtOnce   = 4
	maxHistoryRows       = 10000
	unmappedNamesInNotes = 3
)

// runHealthQuery answers an alarms, alarmHistory or inventory query: the same calls in each
// region of the query (at most regionsAtOnce regions at a time), each region's alarms joined
// to its own inventory only, the rows merged into one frame. A region that fails is named in
// the response's error; the other regions' rows stay.
func (d *Datasource) runHealthQuery(ctx context.Context, m *models.Model, qt string) backend.DataResponse {
	q, err := m.Health(qt)
	if err != nil {
		return problemResponse(refused(backend.DownstreamError(err)))
	}
	regions, err := d.regionsOf(q.RefID, q.Region)
	if err != nil {
		return problemResponse(refused(err))
	}
	// Only a query that names its regions gets region-aware frames and messages, so a
	// panel built for the default region keeps its frame's columns.
	named := q.Region != ""
	f := health.Filter{Endpoints: q.Endpoints, Components: q.Components}
	parts := forRegions(ctx, d, q.RefID, regions, func(ctx context.Context, rg *regional) (p healthPart, err error) {
		if rg.aws == nil {
			return p, rg.awsErr
		}
		switch qt {
		case models.QueryTypeAlarms:
			p.states, p.notices, err = rg.alarms(ctx, q, f)
		case models.QueryTypeAlarmHistory:
			p.rows, p.notices, err = rg.alarmHistory(ctx, q, f)
		default:
			p.inv, p.notices, err = rg.inventory(ctx)
		}
		return p, err
	})
	var (
		states  []health.State
		rows    []health.HistoryRow
		invs    []awsapi.Inventory
		notices []data.Notice
		ok      int
	)
	for _, part := range parts {
		if part.failed != nil {
			continue
		}
		p := part.val
		ok++
		states, rows, invs = append(states, p.states...), append(rows, p.rows...), append(invs, p.inv...)
		for _, n := range p.notices {
			if named {
				n.Text = "region " + part.region + ": " + n.Text
			}
			notices = append(notices, n)
		}
	}
	if ok == 0 && !named {
		return mergeFailures(named, parts, nil)
	}
	var fr *data.Frame
	switch qt {
	case models.QueryTypeAlarms:
		health.Sort(states)
		fr = health.AlarmsFrame(states, named)
	case models.QueryTypeAlarmHistory:
		fr = health.HistoryFrame(rows, named)
		if q.Format == models.FormatTable {
			fr.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
		}
	default:
		if q.Format == models.FormatAnnotations {
			fr = health.InventoryEventsFrame(invs, f, q.TimeRange.From, q.TimeRange.To, named)
		} else {
			fr = health.InventoryFrame(invs, f, named)
		}
	}
	fr.RefID = q.RefID
	fr.AppendNotices(notices...)
	return mergeFailures(named, parts, data.Frames{fr})
}

// healthPart is one region's share of a health query.
type healthPart struct {
	states  []health.State
	rows    []health.HistoryRow
	inv     []awsapi.Inventory // the region's inventory (one), for the inventory query
	notices []data.Notice
}

// readAlarms and readInventory are calls for parallel; on failure they leave nothing behind,
// so a partial answer is never shown as a whole.
func readAlarms(ctx context.Context, api awsapi.API, into *[]awsapi.Alarm) func() error {
	return func() (err error) {
		if *into, err = api.Alarms(ctx, awsapi.AlarmQuery{}); err != nil {
			*into = nil
		}
		return err
	}
}

// readInventory reads the region's inventory, labelled with the region it was read in.
func readInventory(ctx context.Context, rg *regional, into *awsapi.Inventory) func() error {
	return func() (err error) {
		if *into, err = rg.aws.Inventory(ctx); err != nil {
			*into = awsapi.Inventory{}
		}
		into.Region = rg.region
		return err
	}
}

// warning is a notice explaining a failed optional part of a query in the region.
func (rg *regional) warning(what string, err error) data.Notice {
	return data.Notice{Severity: data.NoticeSeverityWarning, Text: what + ": " + rg.explain(awsErr(err), "").Message}
}

// componentsWarning explains an inventory without (some of) its inference components.
func (rg *regional) componentsWarning(inv awsapi.Inventory) []data.Notice {
	if inv.ComponentsErr == nil {
		return nil
	}
	return []data.Notice{rg.warning("the SageMaker inference components could not be read, so they are left out", inv.ComponentsErr)}
}

// alarms is the alarms query in one region: alarms and inventory at once, contributors of the multi-series
// alarms in ALARM, then the join, and the threshold fallback when asked for. Without the
// inventory (e.g. no SageMaker permission) the resources the alarms name still show, with a
// warning.
func (rg *regional) alarms(ctx context.Context, q *models.HealthQuery, f health.Filter) ([]health.State, []data.Notice, error) {
	var (
		in      = health.Input{Filter: f, Region: rg.region, Contributors: map[string][]awsapi.Contributor{}}
		notices []data.Notice
	)
	errs := parallel("alarms query", readAlarms(ctx, rg.aws, &in.Alarms), readInventory(ctx, rg, &in.Inventory))
	if errs[0] != nil {
		return nil, nil, awsErr(errs[0])
	}
	if errs[1] != nil {
		notices = append(notices, rg.warning("the SageMaker inventory could not be read, so only resources that alarms name are shown", errs[1]))
	}
	notices = append(notices, rg.componentsWarning(in.Inventory)...)
	var need []string
	for _, a := range in.Alarms {
		if health.NeedsContributors(a) {
			need = append(need, a.Name)
		}
	}
	if len(need) > maxContributorCalls {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: fmt.Sprintf(
			"%d multi-series alarms are in ALARM; the resources of the first %d are shown: give alarms names that select one resource", len(need), maxContributorCalls)})
		need = need[:maxContributorCalls]
	}
	var mu sync.Mutex
	calls := make([]func() error, len(need))
	for i, name := range need {
		calls[i] = func() error {
			cs, err := rg.aws.Contributors(ctx, name)
			if err == nil {
				mu.Lock()
				in.Contributors[name] = cs
				mu.Unlock()
			}
			return err
		}
	}
	// One notice per distinct failure: a missing permission fails every alarm alike.
	type failure struct {
		err   error
		names []string
	}
	var failures []*failure
	byText := map[string]*failure{}
	for i, err := range parallelN("alarm contributors", contributorsAtOnce, calls...) {
		if err == nil {
			continue
		}
		text := rg.explain(awsErr(err), "").Message
		if byText[text] == nil {
			byText[text] = &failure{err: err}
			failures = append(failures, byText[text])
		}
		byText[text].names = append(byText[text].names, need[i])
	}
	for _, fail := range failures {
		what := "alarm " + fail.names[0]
		if len(fail.names) > 1 {
			what = fmt.Sprintf("%d alarms (%s)", len(fail.names), examples(fail.names))
		}
		notices = append(notices, rg.warning("the contributors of "+what+" could not be read", fail.err))
	}
	states, unmapped := health.Join(in)
	if len(unmapped) > 0 {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityInfo, Text: fmt.Sprintf(
			"%d alarms name no SageMaker endpoint, inference component or instance and are not shown (%s); "+
				"an alarm over many series names its resources only while in ALARM, through its contributors", len(unmapped), examples(unmapped))})
	}
	if q.ThresholdFallback {
		at := q.TimeRange.To
		if at.IsZero() {
			at = time.Now()
		}
		if err := rg.applyThresholds(ctx, states, f, at, q.Region != ""); err != nil {
			notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning,
				Text: "the threshold fallback could not be evaluated: " + rg.explain(err, "cloudwatch:GetMetricData").Message})
		}
	}
	return states, notices, nil
}

func examples(names []string) string {
	if len(names) <= unmappedNamesInNotes {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:unmappedNamesInNotes], ", ") + ", …"
}

// applyThresholds reads the threshold rules' instant queries in the region (through its
// results cache, like any panel) when some endpoint or inference component has no alarm;
// byAccount (the query names its regions, so its frame shows accounts) reads them per account.
func (rg *regional) applyThresholds(ctx context.Context, states []health.State, f health.Filter, at time.Time, byAccount bool) error {
	if !needsThresholds(states) {
		return nil
	}
	rules := health.ThresholdRules(diagnosis.DefaultConfig(), f, byAccount)
	readings := make([][]health.Reading, len(rules))
	calls := make([]func() error, len(rules))
	for i, r := range rules {
		calls[i] = func() error {
			vector, err := cachedQueries{rg}.Instant(ctx, r.Query, at)
			if err != nil {
				return err
			}
			for _, s := range vector {
				if v := float64(s.Value); !math.IsNaN(v) && !math.IsInf(v, 0) {
					readings[i] = append(readings[i], health.Reading{
						Endpoint:  string(s.Metric[semconv.LabelEndpoint]),
						Component: string(s.Metric[semconv.LabelInferenceComp]),
						Region:    rg.region,
						Account:   string(s.Metric[semconv.LabelAccount]),
						Value:     v,
					})
				}
			}
			return nil
		}
	}
	for _, err := range parallel("threshold fallback", calls...) {
		if err != nil {
			return err
		}
	}
	health.ApplyThresholds(states, rules, readings, at)
	return nil
}

func needsThresholds(states []health.State) bool {
	for _, s := range states {
		if s.Source == health.SourceNone && s.Type != health.TypeInstance {
			return true
		}
	}
	return false
}

// alarmHistory is the alarmHistory query in one region: the transitions in the time range, tied to
// resources through the alarms (read at once).
func (rg *regional) alarmHistory(ctx context.Context, q *models.HealthQuery, f health.Filter) ([]health.HistoryRow, []data.Notice, error) {
	in := health.HistoryInput{Filter: f, Region: rg.region}
	errs := parallel("alarm history query", func() (err error) {
		in.Transitions, err = rg.aws.History(ctx, awsapi.HistoryQuery{From: q.TimeRange.From, To: q.TimeRange.To})
		return err
	}, readAlarms(ctx, rg.aws, &in.Alarms), readInventory(ctx, rg, &in.Inventory))
	if errs[0] != nil {
		return nil, nil, awsErr(errs[0])
	}
	var notices []data.Notice
	if errs[1] != nil {
		notices = append(notices, rg.warning("the alarms could not be read, so transitions are tied to resources only where a series names them", errs[1]))
	}
	if errs[2] != nil {
		notices = append(notices, rg.warning("the SageMaker inventory could not be read, so the endpoint of an inference component may be missing", errs[2]))
	}
	notices = append(notices, rg.componentsWarning(in.Inventory)...)
	if len(in.Transitions) > maxHistoryRows {
		notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: fmt.Sprintf(
			"%d alarm transitions in the time range; the latest %d are shown: narrow the time range or filter by endpoint", len(in.Transitions), maxHistoryRows)})
		in.Transitions = latest(in.Transitions, maxHistoryRows)
	}
	return health.HistoryRows(in), notices, nil
}

// latest keeps the n most recent transitions.
func latest(ts []awsapi.Transition, n int) []awsapi.Transition {
	out := slices.Clone(ts)
	slices.SortStableFunc(out, func(a, b awsapi.Transition) int { return a.Time.Compare(b.Time) })
	return out[len(out)-n:]
}

// inventory is the inventory query's read of one region; the caller frames it as a table or
// as annotations of creations and updates.
func (rg *regional) inventory(ctx context.Context) ([]awsapi.Inventory, []data.Notice, error) {
	var inv awsapi.Inventory
	if err := readInventory(ctx, rg, &inv)(); err != nil {
		return nil, nil, awsErr(err)
	}
	notices := rg.componentsWarning(inv)
	if inv.TagsErr != nil {
		notices = append(notices, rg.warning("the SageMaker resource tags could not be read, so the resources it refused show no tags", inv.TagsErr))
	}
	return []awsapi.Inventory{inv}, notices, nil
}
