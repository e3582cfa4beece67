package awsemu_test

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/smithy-go"

	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// listTags pages through ListTags for one ARN, two tags a page so paging is exercised.
func listTags(t *testing.T, sm *sagemaker.Client, arn string) map[string]string {
	t.Helper()
	out := map[string]string{}
	p := sagemaker.NewListTagsPaginator(sm, &sagemaker.ListTagsInput{ResourceArn: aws.String(arn), MaxResults: aws.Int32(2)})
	for p.HasMorePages() {
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("ListTags %s: %v", arn, err)
		}
		for _, tag := range pg.Tags {
			out[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
	}
	return out
}

// ListTags answers every endpoint's and IC's tags as the tagged generated fleet file gives
// them, hostile keys and values intact, through the real SDK.
func TestListTagsAnswersTheFleetFile(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		base, err := fleet.Generate(rand.New(rand.NewPCG(seed, 3)), 8)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fleet.WithTags(base, rand.New(rand.NewPCG(seed, 35)))
		if err != nil {
			t.Fatal(err)
		}
		st := start(t, stack.Options{Scenario: "healthy", Fleet: f, History: 10 * time.Minute})
		_, sm := clients(st)
		eps, err := sm.ListEndpoints(context.Background(), &sagemaker.ListEndpointsInput{MaxResults: aws.Int32(100)})
		if err != nil {
			t.Fatal(err)
		}
		ics, err := sm.ListInferenceComponents(context.Background(), &sagemaker.ListInferenceComponentsInput{MaxResults: aws.Int32(100)})
		if err != nil {
			t.Fatal(err)
		}
		arns := map[string]string{}
		for _, e := range eps.Endpoints {
			arns[aws.ToString(e.EndpointName)] = aws.ToString(e.EndpointArn)
		}
		for _, c := range ics.InferenceComponents {
			arns[aws.ToString(c.InferenceComponentName)] = aws.ToString(c.InferenceComponentArn)
		}
		checked := 0
		for _, e := range f.Endpoints {
			want := map[string]map[string]string{e.Name: e.Tags}
			for _, ic := range e.InferenceComponents {
				want[ic.Name] = ic.Tags
			}
			for name, tags := range want {
				if got := listTags(t, sm, arns[name]); !maps.Equal(got, tags) && len(got)+len(tags) > 0 {
					t.Errorf("seed %d: ListTags %s = %v, the fleet file says %v", seed, name, got, tags)
				}
				checked += len(tags)
			}
		}
		if checked == 0 {
			t.Errorf("seed %d: the fleet has no tags to check", seed)
		}
		_, err = sm.ListTags(context.Background(), &sagemaker.ListTagsInput{ResourceArn: aws.String(arns[f.Endpoints[0].Name] + "-gone")})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" || !strings.Contains(apiErr.ErrorMessage(), "Could not find resource") {
			t.Errorf("seed %d: ListTags of an unknown ARN: %v", seed, err)
		}
	}
}
