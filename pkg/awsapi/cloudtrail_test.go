package awsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/inferscope/sagemaker-datasource/internal/sigv4verify"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
)

// fakeTrail answers LookupEvents as CloudTrail does (awsJson1_1, X-Amz-Target
// CloudTrail_20131101.LookupEvents, signed for "cloudtrail"): for each event name, pages of
// one event each, pagesPer of them; the first throttle answers are ThrottlingException.
type fakeTrail struct {
	t        *testing.T
	verifier sigv4verify.Verifier
	pagesPer int
	garbled  string // this event name's records are not JSON

	mu       sync.Mutex
	throttle int
	at       []time.Time
	hosts    map[string]bool
}

func (f *fakeTrail) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tgt := r.Header.Get("X-Amz-Target"); tgt != "CloudTrail_20131101.LookupEvents" {
		f.t.Errorf("X-Amz-Target %q", tgt)
	}
	if err := f.verifier.Verify(r); err != nil {
		sigv4verify.WriteAuthError(w, err)
		return
	}
	f.mu.Lock()
	f.at = append(f.at, time.Now())
	f.hosts[r.Host] = true
	throttled := f.throttle > 0
	f.throttle--
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if throttled {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"ThrottlingException","message":"Rate exceeded"}`))
		return
	}
	var in struct {
		LookupAttributes []struct{ AttributeKey, AttributeValue string }
		NextToken        string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.LookupAttributes) != 1 || in.LookupAttributes[0].AttributeKey != "EventName" {
		f.t.Errorf("LookupEvents input %+v, %v: want one EventName attribute", in, err)
	}
	name := in.LookupAttributes[0].AttributeValue
	n := 0
	fmt.Sscan(in.NextToken, &n)
	source := changes.SourceSageMaker
	// Each event name changes resources of its own, so each chains on its own.
	req := fmt.Sprintf(`{"endpointName":"ep-%[1]s","endpointConfigName":"config-%[2]d","inferenceComponentName":"ic-%[1]s"}`, name, n)
	if strings.Contains(name, "Scal") {
		source, req = changes.SourceAutoScaling, `{"serviceNamespace":"sagemaker","resourceId":"inference-component/ic"}`
	}
	record := fmt.Sprintf(`{"eventTime":"2026-12-07T01:%02d:00Z","eventSource":%q,"eventName":%q,"awsRegion":"us-east-1","eventID":"%s-%d",`+
		`"recipientAccountId":"111122223333","userIdentity":{"arn":"arn:aws:iam::111122223333:user/dev","accessKeyId":"AKIASECRETKEY0000001"},"requestParameters":%s}`,
		n, source, name, name, n, req)
	if name == f.garbled {
		record = `{"eventName":` // cut off
	}
	ev := map[string]any{"EventId": fmt.Sprintf("%s-%d", name, n), "EventName": name, "EventSource": source, "CloudTrailEvent": record}
	out := map[string]any{"Events": []any{ev}}
	if n+1 < f.pagesPer {
		out["NextToken"] = fmt.Sprint(n + 1)
	}
	_ = json.NewEncoder(w).Encode(out)
}

func newTrailClient(t *testing.T, f *fakeTrail, o options) ChangeLister {
	t.Helper()
	f.t, f.hosts = t, map[string]bool{}
	f.verifier = sigv4verify.Verifier{Region: testRegion, Service: "cloudtrail",
		Credentials: map[string]sigv4verify.Credential{testKey: {AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: testToken}}}
	s := awsauth.Settings{AuthType: awsauth.AuthKeys, AccessKey: testKey, SecretKey: testSecret, SessionToken: testToken, Region: testRegion}
	ep, err := awsauth.ResolveEndpoint(s)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := awsauth.NewCredentialsProvider(context.Background(), s, awsauth.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	o.base = inMemory{f}
	if o.backoff == nil {
		o.backoff = noWait
	}
	return newChanges(creds, ep, nil, o)
}

func countEvents() int {
	n := 0
	for _, names := range changes.Events {
		n += len(names)
	}
	return n
}

func TestChangesPagesEveryEventNameAtTheRegionalHost(t *testing.T) {
	f := &fakeTrail{pagesPer: 3}
	c := newTrailClient(t, f, options{lookupRate: rate.Inf})
	list, err := c.Changes(context.Background(), ChangeQuery{From: time.Unix(0, 0), To: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * countEvents(); len(list.Changes) != want || list.Unreadable != 0 {
		t.Fatalf("%d changes (%d unreadable), want %d: three pages of every event name", len(list.Changes), list.Unreadable, want)
	}
	for i := 1; i < len(list.Changes); i++ {
		if list.Changes[i].Time.Before(list.Changes[i-1].Time) {
			t.Fatal("changes are not oldest first")
		}
	}
	// The endpoint's config changed with each UpdateEndpoint page: Chain read the one before.
	var froms []string
	for _, ch := range list.Changes {
		if ch.Action == "UpdateEndpoint" {
			froms = append(froms, ch.Diff[0].From+"→"+ch.Diff[0].To)
		}
	}
	if strings.Join(froms, " ") != "→config-0 config-0→config-1 config-1→config-2" {
		t.Errorf("UpdateEndpoint diffs %v", froms)
	}
	if len(f.hosts) != 1 || !f.hosts["cloudtrail.us-east-1.amazonaws.com"] {
		t.Errorf("hosts %v, want only cloudtrail.us-east-1.amazonaws.com", f.hosts)
	}
	if _, err := c.Changes(context.Background(), ChangeQuery{From: time.Now(), To: time.Now().Add(-time.Hour)}); err == nil || !strings.Contains(err.Error(), "end must be after the start") {
		t.Errorf("an empty range: %v", err)
	}
}

func TestChangesSurviveBadRecordsAndEndlessPages(t *testing.T) {
	f := &fakeTrail{pagesPer: 1, garbled: "DeleteEndpoint"}
	list, err := newTrailClient(t, f, options{lookupRate: rate.Inf}).Changes(context.Background(), ChangeQuery{From: time.Unix(0, 0), To: time.Now()})
	if err != nil || list.Unreadable != 1 || len(list.Changes) != countEvents()-1 {
		t.Fatalf("one unreadable record: %d changes, %d unreadable, %v; want it counted and the rest read", len(list.Changes), list.Unreadable, err)
	}
	// A listing whose tokens never end stops at the page bound, named.
	f = &fakeTrail{pagesPer: 1 << 20}
	_, err = newTrailClient(t, f, options{lookupRate: rate.Inf}).Changes(context.Background(), ChangeQuery{From: time.Unix(0, 0), To: time.Now()})
	if err == nil || !strings.Contains(err.Error(), ActionLookupEvents) || !strings.Contains(err.Error(), "shorter time range") || len(f.at) != maxPages {
		t.Fatalf("endless pages: %d calls, %v; want %d calls and an error naming %s", len(f.at), err, maxPages, ActionLookupEvents)
	}
}

// A throttled attempt is retried, and every attempt, retries too, waits for the pace.
func TestChangesArePacedAndRetried(t *testing.T) {
	const perSecond = 40
	f := &fakeTrail{pagesPer: 1, throttle: 2}
	c := newTrailClient(t, f, options{lookupRate: perSecond})
	if _, err := c.Changes(context.Background(), ChangeQuery{From: time.Unix(0, 0), To: time.Now()}); err != nil {
		t.Fatalf("two throttled attempts were not retried: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := countEvents() + 2; len(f.at) != want {
		t.Fatalf("%d attempts, want %d (one per event name and the two retries)", len(f.at), want)
	}
	// The limiter's burst is 1: n attempts span at least (n-1)/rate, however fast the
	// server answers.
	if span, least := f.at[len(f.at)-1].Sub(f.at[0]), time.Duration(len(f.at)-1)*time.Second/perSecond; span < least*9/10 {
		t.Errorf("%d attempts in %v, want them paced over at least %v", len(f.at), span, least)
	}
}

// cachedTrail counts the lookups that reach it.
type cachedTrail struct {
	mu    sync.Mutex
	calls int
	fail  bool
}

func (c *cachedTrail) Changes(_ context.Context, q ChangeQuery) (ChangeList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.fail {
		return ChangeList{}, errors.New("lookup failed")
	}
	return ChangeList{Changes: []changes.Change{{Time: q.From, Resource: "ic"}}}, nil
}

func (c *cachedTrail) ProbeChanges(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return nil
}

func TestCachedChangesKeepsEachRange(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	clock := now
	up := &cachedTrail{}
	c := CachedChanges(up, time.Minute, func() time.Time { return clock })
	ctx := context.Background()
	a := ChangeQuery{From: now.Add(-time.Hour), To: now}
	b := ChangeQuery{From: now.Add(-2 * time.Hour), To: now}
	for _, step := range []struct {
		q       ChangeQuery
		advance time.Duration
		fail    bool
		calls   int
	}{
		{a, 0, false, 1},
		{a, 30 * time.Second, false, 1}, // kept
		{b, 0, false, 2},                // another range
		{a, time.Minute, false, 3},      // expired
		{b, time.Minute, true, 4},       // expired, fails
		{b, 0, false, 5},                // the error was not kept
	} {
		clock = clock.Add(step.advance)
		up.fail = step.fail
		l, err := c.Changes(ctx, step.q)
		if (err != nil) != step.fail || (!step.fail && (len(l.Changes) != 1 || !l.Changes[0].Time.Equal(step.q.From))) {
			t.Fatalf("range %v: %+v, %v", step.q, l, err)
		}
		if up.calls != step.calls {
			t.Fatalf("range %v at +%v: %d lookups, want %d", step.q.From, clock.Sub(now), up.calls, step.calls)
		}
	}
	_ = c.ProbeChanges(ctx)
	_ = c.ProbeChanges(ctx)
	if up.calls != 7 {
		t.Errorf("probes were cached: %d calls, want 7", up.calls)
	}
}

// TestCachedChangesSharesTheMinute: two refreshes of a relative range within one minute make
// one lookup of the range widened to whole minutes, and each sees only the changes inside its
// own range.
func TestCachedChangesSharesTheMinute(t *testing.T) {
	now := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	up := &cachedTrail{}
	c := CachedChanges(up, time.Minute, func() time.Time { return now })
	for _, q := range []ChangeQuery{
		{From: now.Add(-time.Hour + 10*time.Second), To: now.Add(10 * time.Second)},
		{From: now.Add(-time.Hour + 40*time.Second), To: now.Add(40 * time.Second)},
	} {
		l, err := c.Changes(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		// The fake's one change is at the widened range's start, before q.From.
		if len(l.Changes) != 0 {
			t.Errorf("range %v–%v: %+v, want none (the change is before the range)", q.From, q.To, l.Changes)
		}
	}
	if up.calls != 1 {
		t.Errorf("%d lookups for two refreshes within a minute, want 1", up.calls)
	}
	l, err := c.Changes(context.Background(), ChangeQuery{From: now.Add(-time.Hour), To: now.Add(30 * time.Second)})
	if err != nil || len(l.Changes) != 1 || !l.Changes[0].Time.Equal(now.Add(-time.Hour)) {
		t.Errorf("a range from the whole minute keeps its change: %+v, %v", l, err)
	}
}

// countingPacer counts its waits; after allow of them it refuses.
type countingPacer struct {
	mu           sync.Mutex
	waits, allow int
}

func (p *countingPacer) Wait(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits++
	if p.waits > p.allow {
		return errors.New("the shared pace leaves no call before the deadline")
	}
	return nil
}

// WithLookupPacer's pacer paces every attempt, retries too, in place of the client's own
// limiter; its refusal fails the call without sending it.
func TestChangesUseTheLookupPacer(t *testing.T) {
	f := &fakeTrail{pagesPer: 1, throttle: 1}
	p := &countingPacer{allow: 1 << 20}
	// A local limiter of one call an hour would take the test's lifetime.
	c := newTrailClient(t, f, options{lookupRate: rate.Every(time.Hour), lookupPacer: p})
	if _, err := c.Changes(context.Background(), ChangeQuery{From: time.Unix(0, 0), To: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if want := countEvents() + 1; p.waits != want || len(f.at) != want {
		t.Fatalf("%d waits, %d attempts: want %d of each (one per event name and the retry)", p.waits, len(f.at), want)
	}
	f.at, p.waits, p.allow = nil, 0, 0
	if err := c.ProbeChanges(context.Background()); err == nil || !strings.Contains(err.Error(), "shared pace") {
		t.Errorf("a refusing pacer: %v, want its error", err)
	}
	if len(f.at) != 0 {
		t.Errorf("%d calls sent past a refusing pacer", len(f.at))
	}
}
