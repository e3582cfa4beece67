package pricing

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// entry writes one GetProducts PriceList entry the way the API shapes it.
func entry(family, component, region, typ, unit, usd, effective string) string {
	return fmt.Sprintf(`{"product":{"productFamily":%q,"attributes":{"regionCode":%q,"instanceName":%q,"component":%q,"servicecode":"AmazonSageMaker"},"sku":"X"},`+
		`"serviceCode":"AmazonSageMaker","terms":{"OnDemand":{"X.JRTCKXETXF":{"effectiveDate":%q,"priceDimensions":{"X.JRTCKXETXF.6YS6EN2CT7":`+
		`{"unit":%q,"description":"d","pricePerUnit":{"USD":%q}}}}}},"version":"v","publicationDate":"2025-01-02T00:00:00Z"}`,
		family, region, typ, component, effective, unit, usd)
}

func TestParseProducts(t *testing.T) {
	const day1, day2 = "2025-03-01T00:00:00Z", "2025-06-01T00:00:00Z"
	entries := []string{
		entry(FamilyMLInstance, ComponentHosting, "us-east-1", "ml.g5.2xlarge", "Hrs", "1.515", day1),
		entry(FamilyMLInstance, ComponentHosting, "us-east-1", "ml.g5.2xlarge", "Hrs", "1.6", day2),   // newer term wins
		entry(FamilyMLInstance, "Training", "us-east-1", "ml.g5.4xlarge", "Hrs", "2.03", day1),        // not hosting
		entry(FamilyMLInstance, ComponentHosting, "us-east-1", "ml.g5.8xlarge", "GB-Mo", "0.1", day1), // not hourly
		entry(FamilyMLInstance, ComponentHosting, "us-east-1", "ml.g5.12xlarge", "Hrs", "0", day1),    // free: never a price
		entry(FamilyMLInstance, ComponentHosting, "eu-west-1", "ml.g5.2xlarge", "Hrs", "1.7", "not a date"),
		entry("Storage", ComponentHosting, "us-east-1", "ml.g5.48xlarge", "Hrs", "9", day1),
	}
	got, err := ParseProducts(entries)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"eu-west-1 ml.g5.2xlarge 1.7 2025-01-02", // the publication date stands in for a bad effective date
		"us-east-1 ml.g5.2xlarge 1.6 2025-06-01",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d prices %v, want %v", len(got), got, want)
	}
	for i, p := range got {
		if s := fmt.Sprintf("%s %s %g %s", p.Region, p.InstanceType, p.USDPerHour, p.Date.Format(time.DateOnly)); s != want[i] || p.Source != SourceList {
			t.Errorf("price %d = %s (%s), want %s", i, s, p.Source, want[i])
		}
	}
	if _, err := ParseProducts([]string{"<html>"}); err == nil || !strings.Contains(err.Error(), "entry 0") {
		t.Errorf("a non-JSON entry: err = %v, want one naming entry 0", err)
	}
	// Page by page: the same prices, and entries are counted across pages.
	var r ListReader
	for page := range slices.Chunk(entries, 2) {
		if err := r.Add(page); err != nil {
			t.Fatal(err)
		}
	}
	if paged := r.Prices(); !slices.Equal(paged, got) {
		t.Errorf("read in pages of 2: %v, want %v", paged, got)
	}
	if err := r.Add([]string{"{"}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("entry %d", len(entries))) {
		t.Errorf("a non-JSON entry after %d: err = %v, want one naming entry %d", len(entries), err, len(entries))
	}
}

func TestBookLookup(t *testing.T) {
	denied := errors.New("pricing:GetProducts is not allowed")
	b := NewBook([]Price{
		{InstanceType: "ml.g5.2xlarge", USDPerHour: 1.1},                      // every region
		{Region: "eu-west-1", InstanceType: "ml.g5.2xlarge", USDPerHour: 1.3}, // this region
	})
	b.AddList("us-east-1", []Price{
		{Region: "us-east-1", InstanceType: "ml.g5.2xlarge", USDPerHour: 1.515, Source: SourceList},
		{Region: "us-east-1", InstanceType: "ml.g6.2xlarge", USDPerHour: 1.222, Source: SourceList},
		{Region: "us-west-2", InstanceType: "ml.g6.4xlarge", USDPerHour: 2, Source: SourceList}, // another region's: ignored
	}, nil)
	b.AddList("ap-south-1", nil, denied)
	for _, tc := range []struct {
		region, typ string
		usd         float64
		source, gap string
	}{
		{"us-east-1", "ml.g5.2xlarge", 1.1, SourceSettings, ""},
		{"eu-west-1", "ml.g5.2xlarge", 1.3, SourceSettings, ""},
		{"us-east-1", "ml.g6.2xlarge", 1.222, SourceList, ""},
		{"us-west-2", "ml.g6.4xlarge", 0, "", "no price for ml.g6.4xlarge in us-west-2: the AWS Price List has none"},
		{"ap-south-1", "ml.g6.2xlarge", 0, "", "no price for ml.g6.2xlarge in ap-south-1: pricing:GetProducts is not allowed"},
	} {
		p, err := b.Lookup(tc.region, tc.typ)
		if tc.gap != "" {
			var gap *GapError
			if !errors.As(err, &gap) || !strings.HasPrefix(err.Error(), tc.gap) || p.USDPerHour != 0 {
				t.Errorf("Lookup(%s, %s) = %v, %v; want the gap %q", tc.region, tc.typ, p, err, tc.gap)
			}
			continue
		}
		if err != nil || p.USDPerHour != tc.usd || p.Source != tc.source || p.Region != tc.region {
			t.Errorf("Lookup(%s, %s) = %+v, %v; want %g from %s", tc.region, tc.typ, p, err, tc.usd, tc.source)
		}
	}
	if !errors.Is(mustGap(t, b, "ap-south-1"), denied) {
		t.Error("a region's list failure does not unwrap from its gaps")
	}
}

func mustGap(t *testing.T, b *Book, region string) error {
	t.Helper()
	_, err := b.Lookup(region, "ml.x.large")
	if err == nil {
		t.Fatal("no gap")
	}
	return err
}

func TestCheckTable(t *testing.T) {
	for _, tc := range []struct {
		table []Price
		want  string
	}{
		{[]Price{{InstanceType: "ml.g5.2xlarge", USDPerHour: 1}, {Region: "us-east-1", InstanceType: "ml.g5.2xlarge", USDPerHour: 1}}, ""},
		{[]Price{{InstanceType: "g5.2xlarge", USDPerHour: 1}}, `priceTable[0]: instanceType "g5.2xlarge" is not a SageMaker instance type`},
		{[]Price{{InstanceType: "ml.g5.2xlarge"}}, "priceTable[0]: usdPerHour 0 is out of range"},
		{[]Price{{InstanceType: "ml.g5.2xlarge", USDPerHour: 1}, {InstanceType: "ml.g5.2xlarge", USDPerHour: 2}}, "priceTable[1]: ml.g5.2xlarge in every region is priced twice"},
	} {
		err := CheckTable(tc.table)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckTable(%v) = %v, want %q", tc.table, err, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	p := Price{USDPerHour: 1.515, Source: SourceList, Date: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)}
	if got := p.Describe(); got != "$1.515/h (AWS Price List, 2025-06-01)" {
		t.Errorf("Describe = %q", got)
	}
	if got := (Price{USDPerHour: 2, Source: SourceSettings}).Describe(); got != "$2/h (price table)" {
		t.Errorf("Describe = %q", got)
	}
}
