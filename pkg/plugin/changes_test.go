package plugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/changes"
	"github.com/inferscope/sagemaker-datasource/pkg/internal/goldentest"
	"github.com/inferscope/sagemaker-datasource/pkg/models"
)

// fleetChanges are the fake fleet's changes in the query range: an image update of chat-llama
// (its event names no endpoint: the inventory's), chat's new config, and a scaling policy on
// embed in another account.
func fleetChanges() []changes.Change {
	at := func(min int) time.Time { return from.Add(time.Duration(min) * time.Minute) }
	who := "arn:aws:sts::111122223333:assumed-role/deployer/ci"
	return []changes.Change{
		{Time: at(30), Who: who, Action: "UpdateInferenceComponent", Source: changes.SourceSageMaker, Kind: changes.KindComponent, Resource: "chat-llama",
			Region: "us-east-1", Account: "111122223333", EventID: "ev-llama", Diff: []changes.Delta{{Field: changes.FieldImage, From: "repo/vllm:0.6.3", To: "repo/vllm:0.6.4"}}},
		{Time: at(10), Who: who, Action: "UpdateEndpoint", Source: changes.SourceSageMaker, Kind: changes.KindEndpoint, Resource: "chat", Endpoint: "chat",
			Region: "us-east-1", Account: "111122223333", EventID: "ev-chat", Diff: []changes.Delta{{Field: changes.FieldConfig, From: "chat-cfg", To: "chat-cfg-v2"}}},
		{Time: at(40), Who: "arn:aws:iam::444455556666:user/ops", Action: "PutScalingPolicy", Source: changes.SourceAutoScaling, Kind: changes.KindEndpoint, Resource: "embed", Endpoint: "embed",
			Region: "us-east-1", Account: "444455556666", EventID: "ev-embed", Diff: []changes.Delta{{Field: changes.FieldScalingPolicy, To: "embed-target"}}},
	}
}

func newChangesDatasource(t *testing.T, ct *fakeChanges) *Datasource {
	t.Helper()
	d := newAWSDatasource(t, &fakeUpstream{}, fullFake())
	d.home.changes, d.home.changesErr = ct, nil
	return d
}

// TestChangesGolden: the table (with its console links) and the annotations, field for field.
func TestChangesGolden(t *testing.T) {
	for _, tt := range []struct{ name, model string }{
		{"changes-table", `{}`},
		{"changes-annotations", `{"format":"annotations","endpoint":"chat"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dr := runOne(t, newChangesDatasource(t, &fakeChanges{list: fleetChanges()}), models.QueryTypeChanges, tt.model)
			goldentest.CheckDataResponse(t, "testdata", tt.name, &dr, *update)
		})
	}
}

// TestChangesFilters: the endpoint, IC and account fields keep what docs/query-editor.md says;
// an IC's change is kept by its endpoint through the inventory.
func TestChangesFilters(t *testing.T) {
	for _, tt := range []struct{ model, want string }{
		{`{}`, "chat chat-llama embed"},
		{`{"endpoint":"chat"}`, "chat chat-llama"},
		{`{"endpoint":"embed"}`, "embed"},
		{`{"inferenceComponent":"chat-llama"}`, "chat chat-llama embed"},
		{`{"endpoint":"chat","inferenceComponent":"chat-qwen"}`, "chat"},
		{`{"account":"444455556666"}`, "embed"},
		{`{"endpoint":"$endpoint"}`, "chat chat-llama embed"},
	} {
		dr := runOne(t, newChangesDatasource(t, &fakeChanges{list: fleetChanges()}), models.QueryTypeChanges, tt.model)
		if dr.Error != nil {
			t.Fatalf("%s: %v", tt.model, dr.Error)
		}
		if got := strings.Join(frameColumn(t, dr.Frames[0], "resource"), " "); got != tt.want {
			t.Errorf("%s: resources %q, want %q", tt.model, got, tt.want)
		}
	}
}

// TestChangesErrors: a denied LookupEvents names the action; a bad account is refused naming
// the field.
func TestChangesErrors(t *testing.T) {
	denied := &fakeChanges{err: &awsapi.PermissionError{Action: awsapi.ActionLookupEvents, Err: errors.New("AccessDeniedException")}}
	dr := runOne(t, newChangesDatasource(t, denied), models.QueryTypeChanges, `{}`)
	if dr.Error == nil || !strings.Contains(dr.Error.Error(), "cloudtrail:LookupEvents") {
		t.Fatalf("denied: %v, want an error naming cloudtrail:LookupEvents", dr.Error)
	}
	dr = runOne(t, newChangesDatasource(t, &fakeChanges{}), models.QueryTypeChanges, `{"account":"12345"}`)
	if dr.Error == nil || !strings.Contains(dr.Error.Error(), `field "account"`) {
		t.Fatalf("bad account: %v, want an error naming the field", dr.Error)
	}
	// A CloudTrail client that could not be built: the query says why.
	d, err := New(context.Background(), testSettings(""), func(context.Context, *models.Settings, awsauth.Endpoint, Shared) (Upstream, error) {
		return &fakeUpstream{}, nil
	},
		WithChanges(func(*models.Settings, awsauth.Endpoint, Shared) (awsapi.ChangeLister, error) {
			return nil, errors.New("no client")
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Dispose)
	if dr := runOne(t, d, models.QueryTypeChanges, `{}`); dr.Error == nil || !slices.Contains(strings.Fields(dr.Error.Error()), "client") {
		t.Fatalf("no client: %v", dr.Error)
	}
}

// TestChangesAnnotationText: an annotation says who when CloudTrail names them, and never a
// dangling "by " when it does not.
func TestChangesAnnotationText(t *testing.T) {
	img := []changes.Delta{{Field: changes.FieldImage, From: "repo/vllm:0.6.3", To: "repo/vllm:0.6.4"}}
	for _, tt := range []struct {
		who  string
		diff []changes.Delta
		want string
	}{
		{"arn:aws:iam::111122223333:user/ops", img, "by arn:aws:iam::111122223333:user/ops: image 0.6.3 → 0.6.4"},
		{"arn:aws:iam::111122223333:user/ops", nil, "by arn:aws:iam::111122223333:user/ops"},
		{"", img, "image 0.6.3 → 0.6.4"},
		{"", nil, ""},
	} {
		fr := changesAnnotations([]changes.Change{{Time: from, Who: tt.who, Action: "UpdateInferenceComponent", Resource: "chat-llama", Diff: tt.diff}})
		if got := fr.Fields[2].At(0).(string); got != tt.want {
			t.Errorf("who %q: text %q, want %q", tt.who, got, tt.want)
		}
	}
}
