package awsemu_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	prtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"

	prices "github.com/inferscope/sagemaker-datasource/pkg/pricing"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

func pricingClient(st *stack.Stack, signingName string) *pricing.Client {
	cfg := aws.Config{Region: st.Region, Credentials: credentials.NewStaticCredentialsProvider(st.AccessKey, st.SecretKey, ""), RetryMaxAttempts: 1}
	opts := []func(*pricing.Options){func(o *pricing.Options) { o.BaseEndpoint = aws.String(st.URL) }}
	if signingName != "" {
		opts = append(opts, pricing.WithSigV4SigningName(signingName))
	}
	return pricing.NewFromConfig(cfg, opts...)
}

func hostingIn(region string) *pricing.GetProductsInput {
	term := func(f, v string) prtypes.Filter {
		return prtypes.Filter{Field: aws.String(f), Value: aws.String(v), Type: prtypes.FilterTypeTermMatch}
	}
	return &pricing.GetProductsInput{ServiceCode: aws.String("AmazonSageMaker"), FormatVersion: aws.String("aws_v1"), MaxResults: aws.Int32(2),
		Filters: []prtypes.Filter{term("productFamily", "ML Instance"), term("regionCode", region), term("component", "Hosting")}}
}

// TestGetProductsPagesTheFixture: the SDK's paginator reads the region's hosting products
// two at a time, each a PriceList entry the plugin's parser reads as an hourly price; other
// regions and components stay out.
func TestGetProductsPagesTheFixture(t *testing.T) {
	st := start(t, stack.Options{Scenario: "healthy", History: 10 * time.Minute})
	for _, tc := range []struct {
		region string
		want   map[string]float64
	}{
		{"us-east-1", map[string]float64{"ml.g5.2xlarge": 1.515, "ml.g5.12xlarge": 7.09, "ml.g6e.12xlarge": 13.117, "ml.p4d.24xlarge": 37.688, "ml.p5.48xlarge": 113.068}},
		{"sa-east-1", map[string]float64{"ml.g5.2xlarge": 2.3482, "ml.g5.12xlarge": 10.9895, "ml.g6e.12xlarge": 20.3314, "ml.p4d.24xlarge": 58.4164}},
	} {
		p := pricing.NewGetProductsPaginator(pricingClient(st, ""), hostingIn(tc.region))
		got, pages := map[string]float64{}, 0
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatalf("%s page %d: %v", tc.region, pages, err)
			}
			if len(page.PriceList) > 2 {
				t.Fatalf("page of %d for MaxResults 2", len(page.PriceList))
			}
			pages++
			// The plugin's parser keeps hourly on-demand hosting prices only: an entry of
			// another region, component or unit, or not in AWS's shape, is one fewer price.
			ps, err := prices.ParseProducts(page.PriceList)
			if err != nil || len(ps) != len(page.PriceList) {
				t.Fatalf("%s page %d: %d of %d entries are hosting prices (%v)", tc.region, pages, len(ps), len(page.PriceList), err)
			}
			for _, pr := range ps {
				if pr.Region != tc.region {
					t.Errorf("%s: a price of %s", tc.region, pr.Region)
				}
				got[pr.InstanceType] = pr.USDPerHour
			}
		}
		if len(got) != len(tc.want) || pages != (len(tc.want)+1)/2 {
			t.Errorf("%s: %d pages of %v, want %v", tc.region, pages, got, tc.want)
		}
		for typ, usd := range tc.want {
			if got[typ] != usd {
				t.Errorf("%s %s: %v, want %v", tc.region, typ, got[typ], usd)
			}
		}
	}
}

// TestGetProductsIsVerifiedAndDeniable: a signature for another service is refused, and
// --deny pricing:GetProducts answers AccessDeniedException naming the action.
func TestGetProductsIsVerifiedAndDeniable(t *testing.T) {
	ctx := context.Background()
	var apiErr smithy.APIError
	st := start(t, stack.Options{Scenario: "healthy", History: 10 * time.Minute})
	if _, err := pricingClient(st, "sagemaker").GetProducts(ctx, hostingIn("us-east-1")); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidSignatureException" || !strings.Contains(apiErr.ErrorMessage(), "pricing") {
		t.Errorf("GetProducts signed for sagemaker: %v", err)
	}
	bad := hostingIn("us-east-1")
	bad.ServiceCode = aws.String("AmazonEC2")
	if _, err := pricingClient(st, "").GetProducts(ctx, bad); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidParameterException" {
		t.Errorf("another service: %v", err)
	}
	denied := start(t, stack.Options{Scenario: "healthy", History: 10 * time.Minute, Deny: []string{"pricing:GetProducts"}})
	if _, err := pricingClient(denied, "").GetProducts(ctx, hostingIn("us-east-1")); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDeniedException" || !strings.Contains(apiErr.ErrorMessage(), "pricing:GetProducts") {
		t.Errorf("denied GetProducts: %v", err)
	}
}
