package changes

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// Secrets the events below carry where CloudTrail puts them (userIdentity) and where a
// careless deployer does (the container's environment, a presigned model URL).
const (
	accessKey    = "ASIAQEXAMPLEKEY12345"
	sessionToken = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKENvalue"
	envSecret    = "hf_EXAMPLEsecretTOKEN"
	urlSignature = "X-Amz-Signature=deadbeefcafe"
)

// event is a CloudTrail record in the shape CloudTrail documents (record contents:
// eventVersion, userIdentity, eventTime, eventSource, eventName, awsRegion,
// requestParameters, responseElements, eventID, readOnly, recipientAccountId), with the
// request given.
func event(source, name, request string, extra ...string) string {
	rec := `{"eventVersion":"1.09",
	"userIdentity":{"type":"AssumedRole","principalId":"AROAEXAMPLEID:ci-deploy",
		"arn":"arn:aws:sts::111122223333:assumed-role/deployer/ci-deploy","accountId":"111122223333",
		"accessKeyId":"` + accessKey + `","sessionToken":"` + sessionToken + `",
		"sessionContext":{"sessionIssuer":{"type":"Role","principalId":"AROAEXAMPLEID","arn":"arn:aws:iam::111122223333:role/deployer",
			"accountId":"111122223333","userName":"deployer"},"attributes":{"creationDate":"2026-12-07T00:58:00Z","mfaAuthenticated":"false"}}},
	"eventTime":"2026-12-07T01:00:00Z","eventSource":"` + source + `","eventName":"` + name + `","awsRegion":"us-east-1",
	"sourceIPAddress":"203.0.113.7","userAgent":"aws-cli/2.22.0",
	"requestParameters":` + request + `,
	"responseElements":{"inferenceComponentArn":"arn:aws:sagemaker:us-east-1:111122223333:inference-component/chat-ic"},
	"requestID":"6f0d7d0e-0000-4000-8000-000000000001","eventID":"0b7b4c3e-1111-4222-8333-444455556666",
	"readOnly":false,"eventType":"AwsApiCall","managementEvent":true,"recipientAccountId":"111122223333","eventCategory":"Management"`
	for _, e := range extra {
		rec += "," + e
	}
	return rec + "}"
}

func TestParse(t *testing.T) {
	who := "arn:aws:sts::111122223333:assumed-role/deployer/ci-deploy"
	at := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	tests := []struct {
		name, event string
		want        Change
		wantErr     string // "" for success
		notAChange  bool
	}{
		{
			name: "image update on an IC, camelCase as CloudTrail writes it",
			event: event(SourceSageMaker, "UpdateInferenceComponent", `{"inferenceComponentName":"chat-ic",
				"specification":{"container":{"image":"763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:1.4",
					"artifactUrl":"s3://models/llama/model.tar.gz?`+urlSignature+`","environment":{"HF_TOKEN":"`+envSecret+`"}},
					"computeResourceRequirements":{"numberOfAcceleratorDevicesRequired":1,"minMemoryRequiredInMb":1024}},
				"runtimeConfig":{"copyCount":2}}`),
			want: Change{Time: at, Who: who, Action: "UpdateInferenceComponent", Source: SourceSageMaker, Kind: KindComponent, Resource: "chat-ic",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: FieldImage, To: "763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:1.4"},
					{Field: FieldModelData, To: "s3://models/llama/model.tar.gz"}, {Field: FieldCopies, To: "2"}}},
		},
		{
			name: "new IC in PascalCase names its endpoint and model",
			event: event(SourceSageMaker, "CreateInferenceComponent", `{"InferenceComponentName":"code-ic","EndpointName":"llm-ep","VariantName":"AllTraffic",
				"Specification":{"ModelName":"qwen-coder-7b"},"RuntimeConfig":{"CopyCount":1}}`),
			want: Change{Time: at, Who: who, Action: "CreateInferenceComponent", Source: SourceSageMaker, Kind: KindComponent, Resource: "code-ic", Endpoint: "llm-ep",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: FieldModel, To: "qwen-coder-7b"}, {Field: FieldCopies, To: "1"}}},
		},
		{
			name:  "copies by runtime config",
			event: event(SourceSageMaker, "UpdateInferenceComponentRuntimeConfig", `{"inferenceComponentName":"chat-ic","desiredRuntimeConfig":{"copyCount":4}}`),
			want: Change{Time: at, Who: who, Action: "UpdateInferenceComponentRuntimeConfig", Source: SourceSageMaker, Kind: KindComponent, Resource: "chat-ic",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: FieldCopies, To: "4"}}},
		},
		{
			name:  "endpoint moved to a new config",
			event: event(SourceSageMaker, "UpdateEndpoint", `{"endpointName":"llm-ep","endpointConfigName":"llm-ep-config-v2","retainAllVariantProperties":false}`),
			want: Change{Time: at, Who: who, Action: "UpdateEndpoint", Source: SourceSageMaker, Kind: KindEndpoint, Resource: "llm-ep", Endpoint: "llm-ep",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: FieldConfig, To: "llm-ep-config-v2"}}},
		},
		{
			name: "endpoint config with its variants",
			event: event(SourceSageMaker, "CreateEndpointConfig", `{"endpointConfigName":"llm-ep-config-v2","productionVariants":[
				{"variantName":"AllTraffic","instanceType":"ml.g6e.2xlarge","initialInstanceCount":2,"modelName":"llama-8b"}],"tags":[{"key":"token","value":"`+envSecret+`"}]}`),
			want: Change{Time: at, Who: who, Action: "CreateEndpointConfig", Source: SourceSageMaker, Kind: KindEndpointConfig, Resource: "llm-ep-config-v2",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: "AllTraffic " + FieldModel, To: "llama-8b"}, {Field: "AllTraffic " + FieldInstanceType, To: "ml.g6e.2xlarge"},
					{Field: "AllTraffic " + FieldInstances, To: "2"}}},
		},
		{
			name: "variant capacity",
			event: event(SourceSageMaker, "UpdateEndpointWeightsAndCapacities", `{"endpointName":"llm-ep",
				"desiredWeightsAndCapacities":[{"variantName":"AllTraffic","desiredInstanceCount":3}]}`),
			want: Change{Time: at, Who: who, Action: "UpdateEndpointWeightsAndCapacities", Source: SourceSageMaker, Kind: KindEndpoint, Resource: "llm-ep", Endpoint: "llm-ep",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: "AllTraffic " + FieldInstances, To: "3"}}},
		},
		{
			name: "target tracking policy on an IC",
			event: event(SourceAutoScaling, "PutScalingPolicy", `{"policyName":"chat-ic-target","serviceNamespace":"sagemaker",
				"resourceId":"inference-component/chat-ic","scalableDimension":"sagemaker:inference-component:DesiredCopyCount","policyType":"TargetTrackingScaling",
				"targetTrackingScalingPolicyConfiguration":{"targetValue":4,"predefinedMetricSpecification":{"predefinedMetricType":"SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"}}}`),
			want: Change{Time: at, Who: who, Action: "PutScalingPolicy", Source: SourceAutoScaling, Kind: KindComponent, Resource: "chat-ic",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: FieldScalingTarget, To: "sagemaker:inference-component:DesiredCopyCount"}, {Field: FieldScalingPolicy, To: "chat-ic-target"},
					{Field: "target SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution", To: "4"}}},
		},
		{
			name: "scalable target of an endpoint variant",
			event: event(SourceAutoScaling, "RegisterScalableTarget", `{"serviceNamespace":"sagemaker","resourceId":"endpoint/llm-ep/variant/AllTraffic",
				"scalableDimension":"sagemaker:variant:DesiredInstanceCount","minCapacity":1,"maxCapacity":4}`),
			want: Change{Time: at, Who: who, Action: "RegisterScalableTarget", Source: SourceAutoScaling, Kind: KindEndpoint, Resource: "llm-ep", Endpoint: "llm-ep",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666",
				Diff: []Delta{{Field: FieldScalingTarget, To: "sagemaker:variant:DesiredInstanceCount"}, {Field: FieldMinCapacity, To: "1"}, {Field: FieldMaxCapacity, To: "4"}}},
		},
		{
			name: "the service's own call is named by the service",
			event: strings.Replace(event(SourceSageMaker, "DeleteInferenceComponent", `{"inferenceComponentName":"old-ic"}`),
				`"arn":"arn:aws:sts::111122223333:assumed-role/deployer/ci-deploy",`, `"invokedBy":"application-autoscaling.amazonaws.com",`, 1),
			want: Change{Time: at, Who: "application-autoscaling.amazonaws.com", Action: "DeleteInferenceComponent", Source: SourceSageMaker, Kind: KindComponent, Resource: "old-ic",
				Region: "us-east-1", Account: "111122223333", EventID: "0b7b4c3e-1111-4222-8333-444455556666"},
		},
		{name: "a failed call changed nothing", notAChange: true,
			event: event(SourceSageMaker, "UpdateEndpoint", `{"endpointName":"llm-ep","endpointConfigName":"x"}`, `"errorCode":"ValidationException"`)},
		{name: "a read is not a change", notAChange: true, event: event(SourceSageMaker, "DescribeEndpoint", `{"endpointName":"llm-ep"}`)},
		{name: "another service's scaling target", notAChange: true,
			event: event(SourceAutoScaling, "PutScalingPolicy", `{"serviceNamespace":"ecs","resourceId":"service/default/web"}`)},
		{name: "not JSON", event: `{"eventName":`, wantErr: "not JSON"},
		{name: "no time", event: strings.Replace(event(SourceSageMaker, "UpdateEndpoint", `{"endpointName":"e"}`), "2026-12-07T01:00:00Z", "yesterday", 1), wantErr: "eventTime"},
		{name: "no resource", event: event(SourceSageMaker, "UpdateEndpoint", `{}`), wantErr: "names no resource"},
		{name: "unknown scalable target", event: event(SourceAutoScaling, "DeleteScalingPolicy", `{"serviceNamespace":"sagemaker","resourceId":"training-job/x"}`),
			wantErr: "not a SageMaker scalable target"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.event)
			switch {
			case tc.notAChange:
				if !errors.Is(err, ErrNotAChange) {
					t.Fatalf("Parse = %+v, %v; want ErrNotAChange", got, err)
				}
				return
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error %v, want one containing %q", err, tc.wantErr)
				}
				return
			case err != nil:
				t.Fatalf("Parse: %v", err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("Parse\n got %s\nwant %s", g, w)
			}
			assertNoSecrets(t, got)
		})
	}
}

// assertNoSecrets fails when any secret of the events reaches the change.
func assertNoSecrets(t *testing.T, c Change) {
	t.Helper()
	b, _ := json.Marshal(c)
	for _, s := range []string{accessKey, sessionToken, envSecret, urlSignature, "AROAEXAMPLEID", "203.0.113.7"} {
		if strings.Contains(string(b), s) {
			t.Errorf("the change carries %q from the event: %s", s, b)
		}
	}
}

func TestChainFillsFromOfTheSameResource(t *testing.T) {
	at := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	ic := func(min int, name, image string) Change {
		return Change{Time: at.Add(time.Duration(min) * time.Minute), Kind: KindComponent, Resource: name, Account: "1", Region: "r",
			Diff: []Delta{{Field: FieldImage, To: image}}}
	}
	// Out of order, as pages may be: Chain sorts first.
	cs := []Change{ic(30, "chat-ic", "vllm:1.4"), ic(0, "chat-ic", "vllm:1.3"), ic(10, "code-ic", "sglang:0.4"), ic(40, "chat-ic", "vllm:1.4")}
	Chain(cs)
	var got []string
	for _, c := range cs {
		got = append(got, c.Resource+":"+c.Diff[0].From+"→"+c.Diff[0].To)
	}
	want := []string{"chat-ic:→vllm:1.3", "code-ic:→sglang:0.4", "chat-ic:vllm:1.3→vllm:1.4", "chat-ic:vllm:1.4→vllm:1.4"}
	if !slices.Equal(got, want) {
		t.Errorf("Chain = %v, want %v", got, want)
	}
}

func TestEveryLookedUpEventParses(t *testing.T) {
	// Each event the plugin looks up must yield a change from a minimal request naming
	// its resource, so no name in Events is dead.
	for source, names := range Events {
		for _, name := range names {
			req := `{"endpointName":"e","endpointConfigName":"c","inferenceComponentName":"i"}`
			if source == SourceAutoScaling {
				req = `{"serviceNamespace":"sagemaker","resourceId":"inference-component/i"}`
			}
			c, err := Parse(event(source, name, req))
			if err != nil || c.Resource == "" || c.Kind == "" {
				t.Errorf("%s %s: %+v, %v", source, name, c, err)
			}
		}
	}
}

func TestDiffText(t *testing.T) {
	for _, c := range []struct {
		in   []Delta
		want string
	}{
		{[]Delta{{Field: "image", From: "acct.dkr.ecr/x:1.3", To: "acct.dkr.ecr/x:1.4"}}, "image 1.3 → 1.4"},
		{[]Delta{{Field: "image", From: "a/x:1", To: "b/y:2"}}, "image a/x:1 → b/y:2"},
		{[]Delta{{Field: "copy count", To: "4"}, {Field: "model", From: "m", To: "m"}}, "copy count 4"},
		{[]Delta{{Field: "model data", From: "s3://b/m/1.tar.gz", To: "s3://b/m/2.tar.gz"}}, "model data s3://b/m/1.tar.gz → s3://b/m/2.tar.gz"},
		{nil, ""},
	} {
		if got := DiffText(c.in); got != c.want {
			t.Errorf("DiffText(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
