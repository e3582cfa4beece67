package awsapi

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudtrail"
	cttypes "github.com/aws/aws-sdk-go-v2/service/cloudtrail/types"
	"github.com/aws/smithy-go/middleware"
	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
)

// ActionLookupEvents is the IAM action of CloudTrail's event history.
const ActionLookupEvents = "cloudtrail:LookupEvents"

// LookupEvents limits: CloudTrail allows LookupEventsTPS calls per second per account and
// region, and at most 50 events a page.
const (
	LookupEventsTPS = 2
	lookupPageSize  = 50
)

// ChangeLister reads the fleet's changes from CloudTrail's event history. Without the
// permission it returns a *PermissionError naming cloudtrail:LookupEvents, which Save &
// test words as a warning.
type ChangeLister interface {
	// Changes are the SageMaker and Application Auto Scaling management events of
	// changes.Events in [From, To], oldest first, with each Delta's From filled from the
	// earlier events of the range (changes.Chain).
	Changes(ctx context.Context, q ChangeQuery) (ChangeList, error)
	// ProbeChanges is Save & test's check: one LookupEvents call (MaxResults 1), never
	// cached.
	ProbeChanges(ctx context.Context) error
}

// ChangeQuery is the time range of a Changes call.
type ChangeQuery struct{ From, To time.Time }

// ChangeList is what Changes found.
type ChangeList struct {
	Changes []changes.Change
	// Unreadable counts the records of a looked-up event that could not be read as a
	// change (changes.Parse's error): left out, never failing the rest.
	Unreadable int
}

// NewChanges is the CloudTrail client of a data source's region on its shared credentials:
// at awsauth.CloudTrailEndpoint(ep), the only host it signs for. Its calls are paced to
// CloudTrail's rate, each attempt (retries too) waiting its turn: on the client's own
// limiter, or on WithLookupPacer's pacer.
func NewChanges(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, opts ...Option) ChangeLister {
	return newChanges(creds, ep, seen, optionsOf(opts))
}

func newChanges(creds aws.CredentialsProvider, ep awsauth.Endpoint, seen awsauth.SecretSink, o options) *client {
	c, config := newBase(creds, ep, seen, o)
	pacer := o.lookupPacer
	if pacer == nil {
		pace := o.lookupRate
		if pace == 0 {
			pace = LookupEventsTPS
		}
		pacer = rate.NewLimiter(pace, 1)
	}
	c.ct = cloudtrail.NewFromConfig(config(awsauth.CloudTrailEndpoint(ep)), func(co *cloudtrail.Options) {
		co.APIOptions = append(co.APIOptions, paced(pacer))
	})
	return c
}

// paced makes every attempt of a call wait for the pacer: it sits after the retry
// middleware, so the SDK's retries of a throttled call are paced too.
func paced(l Pacer) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("InferscopePace",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if err := l.Wait(ctx); err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				return next.HandleFinalize(ctx, in)
			}), "Retry", middleware.After)
	}
}

// Changes looks up each event name of changes.Events (LookupEvents takes one attribute, and
// by event name the listing skips the read-only calls, the plugin's own Describe* among
// them, that an event source would return) and parses the records.
func (c *client) Changes(ctx context.Context, q ChangeQuery) (ChangeList, error) {
	if !q.To.After(q.From) {
		return ChangeList{}, errors.New("awsapi: the changes' time range is empty; the end must be after the start")
	}
	var out ChangeList
	seen := map[string]bool{}
	for _, source := range slices.Sorted(maps.Keys(changes.Events)) {
		for _, name := range changes.Events[source] {
			in := &cloudtrail.LookupEventsInput{
				LookupAttributes: []cttypes.LookupAttribute{{AttributeKey: cttypes.LookupAttributeKeyEventName, AttributeValue: aws.String(name)}},
				StartTime:        aws.Time(q.From), EndTime: aws.Time(q.To), MaxResults: aws.Int32(lookupPageSize),
			}
			pages := cloudtrail.NewLookupEventsPaginator(c.ct, in, func(o *cloudtrail.LookupEventsPaginatorOptions) { o.StopOnDuplicateToken = true })
			err := eachPage(ctx, c, ActionLookupEvents, pages, func(p *cloudtrail.LookupEventsOutput) error {
				for _, e := range p.Events {
					// Another service's event of the same name (EC2 Auto Scaling's
					// PutScalingPolicy) is no change of the fleet.
					if aws.ToString(e.EventSource) != source || seen[aws.ToString(e.EventId)] {
						continue
					}
					seen[aws.ToString(e.EventId)] = true
					ch, err := changes.Parse(aws.ToString(e.CloudTrailEvent))
					switch {
					case errors.Is(err, changes.ErrNotAChange):
					case err != nil:
						out.Unreadable++
					default:
						out.Changes = append(out.Changes, ch)
					}
				}
				return nil
			})
			if err != nil {
				return ChangeList{}, err
			}
		}
	}
	changes.Chain(out.Changes)
	return out, nil
}

// ProbeChanges looks up one event of the first change event name.
func (c *client) ProbeChanges(ctx context.Context) error {
	_, err := call(ctx, c, ActionLookupEvents, func(ctx context.Context) (*cloudtrail.LookupEventsOutput, error) {
		return c.ct.LookupEvents(ctx, &cloudtrail.LookupEventsInput{MaxResults: aws.Int32(1), LookupAttributes: []cttypes.LookupAttribute{
			{AttributeKey: cttypes.LookupAttributeKeyEventName, AttributeValue: aws.String(changes.Events[changes.SourceSageMaker][0])}}})
	})
	return err
}

// CachedChanges keeps each range's changes for ttl (a range that ends in the past does not
// change, one that ends now gains events as CloudTrail delivers them, within minutes);
// concurrent calls for a range share one lookup, errors are not kept. ShareThrough shares
// them with the plugin's other replicas too.
func CachedChanges(l ChangeLister, ttl time.Duration, now func() time.Time, opts ...CacheOption) ChangeLister {
	return &cachedChanges{l: l, c: newCached(nil, ttl, now, opts)}
}

type cachedChanges struct {
	l ChangeLister
	c *cached
}

// Changes looks up the range widened to whole minutes, so the refreshes of a relative range
// ("last hour") within one minute share one paced sweep, and returns the changes inside q.
func (c *cachedChanges) Changes(ctx context.Context, q ChangeQuery) (ChangeList, error) {
	wide := ChangeQuery{From: q.From.Truncate(time.Minute), To: q.To.Truncate(time.Minute)}
	if wide.To.Before(q.To) {
		wide.To = wide.To.Add(time.Minute)
	}
	key := "changes\x00" + strconv.FormatInt(wide.From.UnixNano(), 10) + "\x00" + strconv.FormatInt(wide.To.UnixNano(), 10)
	l, err := get(ctx, c.c, key, wireChanges, keepFor[ChangeList](c.c.ttl), func(l ChangeList) int { return 1 + len(l.Changes) },
		func(ctx context.Context) (ChangeList, error) { return c.l.Changes(ctx, wide) })
	if err != nil {
		return l, err
	}
	in := ChangeList{Unreadable: l.Unreadable}
	for _, ch := range l.Changes {
		if !ch.Time.Before(q.From) && !ch.Time.After(q.To) {
			in.Changes = append(in.Changes, ch)
		}
	}
	return in, nil
}

// ShareStats implements Sharing.
func (c *cachedChanges) ShareStats() ShareStats { return c.c.ShareStats() }

// ProbeChanges is not cached: Save & test must see the permission as it is now.
func (c *cachedChanges) ProbeChanges(ctx context.Context) error { return c.l.ProbeChanges(ctx) }

// CloseIdleConnections passes Dispose on to the wrapped client.
func (c *cachedChanges) CloseIdleConnections() {
	if cl, ok := c.l.(interface{ CloseIdleConnections() }); ok {
		cl.CloseIdleConnections()
	}
}
