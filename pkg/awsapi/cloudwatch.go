package awsapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Alarms pages through DescribeAlarms for metric alarms (PromQL alarms are metric alarms
// with EvaluationCriteria); composite and log alarms name no resource and are skipped.
func (c *client) Alarms(ctx context.Context, q AlarmQuery) ([]Alarm, error) {
	in := &cloudwatch.DescribeAlarmsInput{AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm}, MaxRecords: aws.Int32(100)}
	if q.NamePrefix != "" {
		in.AlarmNamePrefix = aws.String(q.NamePrefix)
	}
	pages := cloudwatch.NewDescribeAlarmsPaginator(c.cw, in, func(o *cloudwatch.DescribeAlarmsPaginatorOptions) { o.StopOnDuplicateToken = true })
	return drain[*cloudwatch.DescribeAlarmsOutput, cloudwatch.Options](ctx, c, ActionDescribeAlarms, pages, func(p *cloudwatch.DescribeAlarmsOutput) []Alarm {
		return mapAll(p.MetricAlarms, alarmOf)
	})
}

// ProbeAlarms asks for one metric alarm, which needs the same permission as Alarms.
func (c *client) ProbeAlarms(ctx context.Context) error {
	_, err := call(ctx, c, ActionDescribeAlarms, func(ctx context.Context) (*cloudwatch.DescribeAlarmsOutput, error) {
		return c.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm}, MaxRecords: aws.Int32(1)})
	})
	return err
}

// Contributors pages through DescribeAlarmContributors (the SDK has no paginator for it).
func (c *client) Contributors(ctx context.Context, alarmName string) ([]Contributor, error) {
	var (
		out  []Contributor
		next *string
		seen = map[string]bool{}
	)
	for n := 0; ; n++ {
		if n == maxPages {
			return nil, tooManyPages(ActionDescribeAlarmContributors)
		}
		page, err := call(ctx, c, ActionDescribeAlarmContributors, func(ctx context.Context) (*cloudwatch.DescribeAlarmContributorsOutput, error) {
			return c.cw.DescribeAlarmContributors(ctx, &cloudwatch.DescribeAlarmContributorsInput{AlarmName: aws.String(alarmName), NextToken: next})
		})
		if err != nil {
			return nil, err
		}
		out = append(out, mapAll(page.AlarmContributors, contributorOf)...)
		next = page.NextToken
		if next == nil || *next == "" || seen[*next] {
			return out, nil
		}
		seen[*next] = true
	}
}

// historyTypes are the items that are state transitions: of the alarm, and of one series
// of a multi-series alarm.
var historyTypes = []cwtypes.HistoryItemType{cwtypes.HistoryItemTypeStateUpdate, cwtypes.HistoryItemTypeAlarmContributorStateUpdate}

// History pages through DescribeAlarmHistory for each item type and each named alarm (the
// operation takes one name), a few calls at a time, and returns the transitions by time.
// Pages come newest first; beyond maxPages of one listing its older transitions are left out
// (a busy account over a long range), since the newest are the ones shown.
func (c *client) History(ctx context.Context, q HistoryQuery) ([]Transition, error) {
	names := q.AlarmNames
	if len(names) == 0 {
		names = []string{""}
	}
	type job struct {
		name string
		kind cwtypes.HistoryItemType
	}
	var jobs []job
	for _, n := range names {
		for _, k := range historyTypes {
			jobs = append(jobs, job{n, k})
		}
	}
	var (
		mu  sync.Mutex
		out []Transition
	)
	err := each(ctx, len(jobs), c.parallel, func(ctx context.Context, i int) error {
		in := &cloudwatch.DescribeAlarmHistoryInput{
			HistoryItemType: jobs[i].kind,
			AlarmTypes:      []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm},
			StartDate:       aws.Time(q.From),
			EndDate:         aws.Time(q.To),
			MaxRecords:      aws.Int32(100),
			ScanBy:          cwtypes.ScanByTimestampDescending,
		}
		if jobs[i].name != "" {
			in.AlarmName = aws.String(jobs[i].name)
		}
		items, err := c.historyPages(ctx, in)
		mu.Lock()
		out = append(out, items...)
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b Transition) int { return a.Time.Compare(b.Time) })
	return out, nil
}

func (c *client) historyPages(ctx context.Context, in *cloudwatch.DescribeAlarmHistoryInput) ([]Transition, error) {
	pages := cloudwatch.NewDescribeAlarmHistoryPaginator(c.cw, in, func(o *cloudwatch.DescribeAlarmHistoryPaginatorOptions) { o.StopOnDuplicateToken = true })
	items, err := drain[*cloudwatch.DescribeAlarmHistoryOutput, cloudwatch.Options](ctx, c, ActionDescribeAlarmHistory, pages, func(p *cloudwatch.DescribeAlarmHistoryOutput) []Transition {
		return mapAll(p.AlarmHistoryItems, transitionOf)
	})
	if errors.Is(err, errPageBound) {
		return items, nil
	}
	return items, err
}

// errPageBound is what a listing longer than maxPages pages ends with.
var errPageBound = fmt.Errorf("more than %d pages of results", maxPages)

func tooManyPages(action string) error {
	return backend.DownstreamError(fmt.Errorf("%s: %w; %s", action, errPageBound, narrowHint(action)))
}
