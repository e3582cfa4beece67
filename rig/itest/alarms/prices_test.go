package alarms_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
	"github.com/inferscope/sagemaker-datasource/rig/itest/dstest"
	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// prices is the plugin's production Price List client with the stack as its custom endpoint.
func prices(t *testing.T, st *stack.Stack) awsapi.PriceLister {
	t.Helper()
	s, ep := endpoint(t, st)
	creds, err := awsauth.NewCredentialsProvider(context.Background(), s, awsauth.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := awsapi.NewPrices(creds, ep, noSink{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPricesAgainstTheEmulator: GetProducts through the SDK, signed and verified, parsed into
// list prices with their date; a region without a type lacks it; denied, the error names
// pricing:GetProducts.
func TestPricesAgainstTheEmulator(t *testing.T) {
	st := dstest.Stack(t, stack.Options{Scenario: "healthy"})
	ctx := context.Background()
	got, err := prices(t, st).Prices(ctx, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	b := pricing.NewBook(nil)
	b.AddList("us-east-1", got, nil)
	p, err := b.Lookup("us-east-1", "ml.g5.12xlarge")
	if err != nil || p.USDPerHour != 7.09 || p.Source != pricing.SourceList || p.Date.Format(time.DateOnly) != "2026-11-01" || len(got) != 5 {
		t.Errorf("us-east-1: %d prices, ml.g5.12xlarge %+v %v", len(got), p, err)
	}
	sa, err := prices(t, st).Prices(ctx, "sa-east-1")
	if err != nil || len(sa) != 4 {
		t.Errorf("sa-east-1: %v %v, want 4 prices (no ml.p5.48xlarge)", sa, err)
	}

	denied := dstest.Stack(t, stack.Options{Scenario: "healthy", Deny: []string{awsapi.ActionGetProducts}})
	_, err = prices(t, denied).Prices(ctx, "us-east-1")
	var perm *awsapi.PermissionError
	if !errors.As(err, &perm) || perm.Action != "pricing:GetProducts" || !strings.Contains(err.Error(), "add it to the IAM policy") {
		t.Errorf("denied: %v, want a PermissionError naming pricing:GetProducts", err)
	}
}
