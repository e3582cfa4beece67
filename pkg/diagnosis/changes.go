package diagnosis

import (
	"context"
	"fmt"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/changes"
)

// ChangeSource reads the region's management changes (CloudTrail's SageMaker and Application
// Auto Scaling events) made in [from, to], oldest first (pkg/diagnosis/awspolicy reads them
// from AWS). Its error (cloudtrail:LookupEvents denied) leaves the change rule silent and
// the report says so; the other rules run as they would without it.
type ChangeSource func(ctx context.Context, from, to time.Time) ([]changes.Change, error)

// changeLookback is how long before the range a change is still read: a regression that
// began before the range and goes on in it is tied to the change before it, which the
// range alone would not show.
const changeLookback = 2 * time.Hour

// readChanges reads the changes that may explain a signal in the range; nil without a
// source or when it failed, which the report says.
func (e *env) readChanges(ctx context.Context) []changes.Change {
	if e.changes == nil {
		return nil
	}
	cs, err := e.changes(ctx, e.start.Add(-changeLookback), e.end)
	if err != nil {
		e.warnings.add(fmt.Sprintf("changes could not be read from CloudTrail, so no finding is tied to a deployment or setting change: %v", err))
		return nil
	}
	return cs
}
