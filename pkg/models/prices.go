package models

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/inferscope/sagemaker-datasource/pkg/awsauth"
	"github.com/inferscope/sagemaker-datasource/pkg/pricing"
)

// maxPriceTable bounds jsonData.priceTable: SageMaker has a few hundred instance types.
const maxPriceTable = 2000

// priceEntryJSON is one jsonData.priceTable entry as stored.
type priceEntryJSON struct {
	InstanceType string          `json:"instanceType"`
	Region       string          `json:"region"`
	USDPerHour   json.RawMessage `json:"usdPerHour"`
}

// loadPriceTable reads jsonData.priceTable: hourly prices that override the AWS Price List
// (Savings Plans, private pricing), for one region or, without a region, for every region.
func loadPriceTable(raw json.RawMessage) ([]pricing.Price, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var entries []priceEntryJSON
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf(`jsonData.priceTable must be a list of {"instanceType": "ml.g5.2xlarge", "region": "us-east-1" (optional), "usdPerHour": 1.21} (%s)`, jsonTypeProblem(err))
	}
	if len(entries) > maxPriceTable {
		return nil, fmt.Errorf("jsonData.priceTable has %d entries, more than the %d accepted: list the instance types the fleet uses", len(entries), maxPriceTable)
	}
	out := make([]pricing.Price, len(entries))
	for i, e := range entries {
		key := fmt.Sprintf("priceTable[%d].usdPerHour", i)
		usd, ok, err := number(key, e.USDPerHour)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, fmt.Errorf("jsonData.%s is missing: give the hourly price in USD", key)
		}
		region := strings.TrimSpace(e.Region)
		if region != "" {
			if err := awsauth.CheckRegionName(region, awsauth.PromQLRegions); err != nil {
				return nil, fmt.Errorf("jsonData.priceTable[%d].region: %w", i, err)
			}
		}
		out[i] = pricing.Price{Region: region, InstanceType: strings.TrimSpace(e.InstanceType), USDPerHour: usd}
	}
	return out, pricing.CheckTable(out)
}
