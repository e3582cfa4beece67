package awsemu_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	aas "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/smithy-go"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

func autoScaling(st *stack.Stack, opts ...func(*aws.Config)) *aas.Client {
	cfg := aws.Config{Region: st.Region, Credentials: credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), RetryMaxAttempts: 1}
	for _, o := range opts {
		o(&cfg)
	}
	return aas.NewFromConfig(cfg, func(o *aas.Options) { o.BaseEndpoint = aws.String(st.URL) })
}

// TestAutoScalingServesTheFleet: on generated fleets and the two multi-account ones, the SDK
// pages through one scalable target per IC of the caller's account (the fleet's: AWS answers
// for no other) with the fleet's min and max copies and one target tracking policy at its
// target concurrency; the production client (pkg/awsapi) reads the same, with that account.
func TestAutoScalingServesTheFleet(t *testing.T) {
	fleets := map[string]*fleet.Fleet{}
	for _, seed := range []uint64{3, 5, 8} {
		f, err := fleet.Generate(rand.New(rand.NewPCG(seed, 1)), 12)
		if err != nil {
			t.Fatal(err)
		}
		fleets[fmt.Sprint(seed)] = f
	}
	for _, f := range fleet.TwoRegions() {
		fleets[f.Region] = f
	}
	for name, f := range fleets {
		t.Run(name, func(t *testing.T) {
			st := start(t, stack.Options{Fleet: f, History: 10 * time.Minute})
			c := autoScaling(st)
			ctx := context.Background()
			want := map[string]fleet.InferenceComponent{}
			for i, e := range f.Endpoints {
				for _, ic := range e.InferenceComponents {
					if f.AccountOf(&f.Endpoints[i]) == f.Account {
						want["inference-component/"+ic.Name] = ic
					}
				}
			}
			seen := map[string]bool{}
			pt := aas.NewDescribeScalableTargetsPaginator(c, &aas.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, MaxResults: aws.Int32(2)})
			for pages := 0; pt.HasMorePages(); pages++ {
				pg, err := pt.NextPage(ctx)
				if err != nil {
					t.Fatalf("DescribeScalableTargets page %d: %v", pages, err)
				}
				if len(pg.ScalableTargets) > 2 {
					t.Fatalf("%d targets on a page of 2", len(pg.ScalableTargets))
				}
				for _, x := range pg.ScalableTargets {
					id := aws.ToString(x.ResourceId)
					ic, ok := want[id]
					if !ok || seen[id] || x.ScalableDimension != aastypes.ScalableDimensionSageMakerInferenceComponentDesiredCopyCount ||
						int(aws.ToInt32(x.MinCapacity)) != ic.MinCopies || int(aws.ToInt32(x.MaxCapacity)) != ic.MaxCopies {
						t.Errorf("target %s %s min %d max %d (seen before %v), fleet: %+v", id, x.ScalableDimension, aws.ToInt32(x.MinCapacity), aws.ToInt32(x.MaxCapacity), seen[id], ic)
					}
					seen[id] = true
				}
			}
			if len(seen) != len(want) {
				t.Errorf("%d targets listed, the fleet has %d ICs", len(seen), len(want))
			}
			pp := aas.NewDescribeScalingPoliciesPaginator(c, &aas.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, MaxResults: aws.Int32(3)})
			n := 0
			for pp.HasMorePages() {
				pg, err := pp.NextPage(ctx)
				if err != nil {
					t.Fatalf("DescribeScalingPolicies: %v", err)
				}
				for _, p := range pg.ScalingPolicies {
					n++
					tt := p.TargetTrackingScalingPolicyConfiguration
					ic := want[aws.ToString(p.ResourceId)]
					if tt == nil || aws.ToFloat64(tt.TargetValue) != ic.TargetConcurrencyPerCopy || tt.PredefinedMetricSpecification == nil ||
						tt.PredefinedMetricSpecification.PredefinedMetricType != aastypes.MetricTypeSageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution {
						t.Errorf("policy %s of %s: %+v, want target tracking of concurrency at %g", aws.ToString(p.PolicyName), aws.ToString(p.ResourceId), tt, ic.TargetConcurrencyPerCopy)
					}
				}
			}
			if n != len(want) {
				t.Errorf("%d policies, want one per IC (%d)", n, len(want))
			}
			u, _ := url.Parse(st.URL)
			api := awsapi.NewWithCredentials(credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), awsauth.Endpoint{URL: u, Region: st.Region}, nil)
			targets, err := api.ScalingTargets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range targets {
				ic := want[x.ResourceID]
				if x.InferenceComponent != ic.Name || x.Account != f.Account || x.Max != ic.MaxCopies || len(x.Policies) != 1 || x.Policies[0].Target != ic.TargetConcurrencyPerCopy {
					t.Errorf("pkg/awsapi read %+v, fleet %+v", x, ic)
				}
			}
			if len(targets) != len(want) {
				t.Errorf("pkg/awsapi read %d targets, want %d", len(targets), len(want))
			}
		})
	}
}

// TestAutoScalingRefusals: a signature for another service, a denied action, a foreign
// token and a page size beyond the API's are refused as AWS refuses them.
func TestAutoScalingRefusals(t *testing.T) {
	st := start(t, stack.Options{Scenario: "healthy", History: 10 * time.Minute, Deny: []string{"application-autoscaling:DescribeScalingPolicies"}})
	c := autoScaling(st)
	ctx := context.Background()
	in := &aas.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker}
	var apiErr smithy.APIError
	if _, err := c.DescribeScalableTargets(ctx, in, aas.WithSigV4SigningName("sagemaker")); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidSignatureException" {
		t.Errorf("signed for sagemaker: %v", err)
	}
	if _, err := c.DescribeScalingPolicies(ctx, &aas.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker}); !errors.As(err, &apiErr) ||
		apiErr.ErrorCode() != "AccessDeniedException" || !strings.Contains(apiErr.ErrorMessage(), "application-autoscaling:DescribeScalingPolicies") {
		t.Errorf("denied DescribeScalingPolicies: %v", err)
	}
	if _, err := c.DescribeScalableTargets(ctx, &aas.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, NextToken: aws.String("bm90LWEtdG9rZW4")}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidNextTokenException" {
		t.Errorf("foreign token: %v", err)
	}
	if _, err := c.DescribeScalableTargets(ctx, &aas.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, MaxResults: aws.Int32(51)}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		t.Errorf("MaxResults 51: %v", err)
	}
	out, err := c.DescribeScalableTargets(ctx, &aas.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceEcs})
	if err != nil || len(out.ScalableTargets) != 0 {
		t.Errorf("another namespace: %v, %d targets, want none", err, len(out.ScalableTargets))
	}
	if out, err := c.DescribeScalableTargets(ctx, in); err != nil || len(out.ScalableTargets) == 0 {
		t.Errorf("a correct call failed: %v", err)
	}
}
