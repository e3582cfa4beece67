// Package pricing holds the hourly prices of SageMaker hosting instances: it reads the AWS
// Price List API's GetProducts entries (ParseProducts) and answers lookups by region and
// instance type from a Book, where a configured price table overrides the list and a
// missing price is a *GapError, never zero. It is pure: pkg/awsapi fetches the entries.
package pricing

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sources of a price.
const (
	SourceList     = "AWS Price List" // on-demand list price, pricing:GetProducts
	SourceSettings = "price table"    // jsonData.priceTable
)

// Price is the hourly price of one instance type in one region.
type Price struct {
	Region       string  `json:"region,omitempty"` // "" in a price table: every region
	InstanceType string  `json:"instanceType"`
	USDPerHour   float64 `json:"usdPerHour"`
	Source       string  `json:"-"`
	// Date is when the list price took effect (the term's effectiveDate, else the list's
	// publicationDate); zero for a price table's entry.
	Date time.Time `json:"-"`
}

// What GetProducts returns per product, as far as prices need it.
type product struct {
	Product struct {
		ProductFamily string            `json:"productFamily"`
		Attributes    map[string]string `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			EffectiveDate   string `json:"effectiveDate"`
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
	PublicationDate string `json:"publicationDate"`
}

// Product attributes and values of SageMaker's real-time hosting instances in the list.
const (
	FamilyMLInstance   = "ML Instance"
	AttrRegion         = "regionCode"
	AttrInstanceName   = "instanceName"
	AttrComponent      = "component"
	ComponentHosting   = "Hosting"
	attrFamily         = "productFamily"
	unitHours          = "Hrs"
	currencyUSD        = "USD"
	maxPlausibleHourly = 10_000 // USD; no instance costs more, so more is a misread list
)

// Filters are the GetProducts filters (field → value, TERM_MATCH) that select region's
// real-time hosting instances.
func Filters(region string) [][2]string {
	return [][2]string{{attrFamily, FamilyMLInstance}, {AttrRegion, region}, {AttrComponent, ComponentHosting}}
}

// ParseProducts reads GetProducts' PriceList entries (one ListReader.Add) and keeps the
// hourly on-demand USD price of each hosting instance type and region.
func ParseProducts(entries []string) ([]Price, error) {
	var r ListReader
	if err := r.Add(entries); err != nil {
		return nil, err
	}
	return r.Prices(), nil
}

// ListReader reads GetProducts' PriceList a page at a time and keeps only the prices, so a
// long list costs the memory of its prices, not of its entries. The zero value is ready.
type ListReader struct {
	best map[[2]string]Price // {region, type}
	read int                 // entries read so far, to name an entry in messages
}

// Add reads one page's entries. Entries of other components, units or currencies are
// skipped; where two entries price one type, the one that took effect last wins. An entry
// that is not JSON fails the whole list: it is not the API's answer.
func (r *ListReader) Add(entries []string) error {
	if r.best == nil {
		r.best = map[[2]string]Price{}
	}
	for _, raw := range entries {
		i := r.read
		r.read++
		var p product
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return fmt.Errorf("price list entry %d is not a GetProducts product (JSON): %v", i, err)
		}
		a := p.Product.Attributes
		if p.Product.ProductFamily != FamilyMLInstance || a[AttrComponent] != ComponentHosting || a[AttrInstanceName] == "" || a[AttrRegion] == "" {
			continue
		}
		published, _ := time.Parse(time.RFC3339, p.PublicationDate)
		for _, term := range p.Terms.OnDemand {
			date, err := time.Parse(time.RFC3339, term.EffectiveDate)
			if err != nil {
				date = published
			}
			for _, dim := range term.PriceDimensions {
				usd, err := strconv.ParseFloat(dim.PricePerUnit[currencyUSD], 64)
				if dim.Unit != unitHours || err != nil || !(usd > 0) || usd > maxPlausibleHourly {
					continue
				}
				k := [2]string{a[AttrRegion], a[AttrInstanceName]}
				if old, ok := r.best[k]; ok && !date.After(old.Date) {
					continue
				}
				r.best[k] = Price{Region: k[0], InstanceType: k[1], USDPerHour: usd, Source: SourceList, Date: date}
			}
		}
	}
	return nil
}

// Prices are the prices read, by region and instance type.
func (r *ListReader) Prices() []Price {
	out := make([]Price, 0, len(r.best))
	for _, p := range r.best {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Price) int {
		return cmp.Or(strings.Compare(a.Region, b.Region), strings.Compare(a.InstanceType, b.InstanceType))
	})
	return out
}

// CheckTable validates a price table (jsonData.priceTable): instance types named as
// SageMaker names them, positive plausible prices, one entry per type and region. Errors
// name the entry and the fix.
func CheckTable(table []Price) error {
	type key struct{ region, typ string }
	seen := map[key]bool{}
	var errs []error
	for i, p := range table {
		at := fmt.Sprintf("jsonData.priceTable[%d]", i)
		switch {
		case !strings.HasPrefix(p.InstanceType, "ml.") || strings.Count(p.InstanceType, ".") != 2:
			errs = append(errs, fmt.Errorf("%s: instanceType %q is not a SageMaker instance type: use a name such as ml.g5.2xlarge", at, p.InstanceType))
		case math.IsNaN(p.USDPerHour) || p.USDPerHour <= 0 || p.USDPerHour > maxPlausibleHourly:
			errs = append(errs, fmt.Errorf("%s: usdPerHour %v is out of range: use the hourly price in USD, above 0 and at most %d", at, p.USDPerHour, maxPlausibleHourly))
		case seen[key{p.Region, p.InstanceType}]:
			errs = append(errs, fmt.Errorf("%s: %s in %s is priced twice: keep one entry", at, p.InstanceType, cmp.Or(p.Region, "every region")))
		}
		seen[key{p.Region, p.InstanceType}] = true
	}
	return errors.Join(errs...)
}

// GapError is a price the book does not have. Costs that need it are shown as missing,
// with this message, never as zero.
type GapError struct {
	Region, InstanceType string
	// Why is the price list's failure for the region (e.g. a missing pricing:GetProducts
	// permission); nil when the list simply has no such type.
	Why error
}

func (e *GapError) Error() string {
	msg := fmt.Sprintf("no price for %s in %s", e.InstanceType, e.Region)
	if e.Why != nil {
		return msg + ": " + e.Why.Error()
	}
	return msg + ": the AWS Price List has none; add it to the price table (jsonData.priceTable)"
}

func (e *GapError) Unwrap() error { return e.Why }

// Book answers prices: a price table entry for the region first, then one for every
// region, then the region's list price.
type Book struct {
	table   map[[2]string]Price // {region or "", type}
	list    map[[2]string]Price
	listErr map[string]error // region → why its list is missing
}

// NewBook is a book over a price table (checked by CheckTable) with no list prices yet.
func NewBook(table []Price) *Book {
	b := &Book{table: map[[2]string]Price{}, list: map[[2]string]Price{}, listErr: map[string]error{}}
	for _, p := range table {
		p.Source, p.Date = SourceSettings, time.Time{}
		b.table[[2]string{p.Region, p.InstanceType}] = p
	}
	return b
}

// AddList adds a region's list prices, or err when the region's list could not be read:
// lookups in that region then say why, unless the price table has the type.
func (b *Book) AddList(region string, prices []Price, err error) {
	if err != nil {
		b.listErr[region] = err
		return
	}
	for _, p := range prices {
		if p.Region == region {
			b.list[[2]string{p.Region, p.InstanceType}] = p
		}
	}
}

// Lookup is the hourly price of instanceType in region, or a *GapError.
func (b *Book) Lookup(region, instanceType string) (Price, error) {
	for _, k := range [][2]string{{region, instanceType}, {"", instanceType}} {
		if p, ok := b.table[k]; ok {
			p.Region = region
			return p, nil
		}
	}
	if p, ok := b.list[[2]string{region, instanceType}]; ok {
		return p, nil
	}
	return Price{}, &GapError{Region: region, InstanceType: instanceType, Why: b.listErr[region]}
}

// Describe states a price as its inputs: "$1.515/h (AWS Price List, 2025-06-01)".
func (p Price) Describe() string {
	s := "$" + strconv.FormatFloat(p.USDPerHour, 'f', -1, 64) + "/h (" + p.Source
	if !p.Date.IsZero() {
		s += ", " + p.Date.UTC().Format(time.DateOnly)
	}
	return s + ")"
}
