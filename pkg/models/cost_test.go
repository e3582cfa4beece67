package models

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

func TestParseCostQuery(t *testing.T) {
	tr := backend.TimeRange{From: time.Unix(0, 0), To: time.Unix(3600, 0)}
	for _, tc := range []struct {
		json, want string
		check      func(*CostQuery) bool
	}{
		{`{}`, "", func(q *CostQuery) bool { return q.View == CostViewSpend && q.GPUsPerCopy == 1 && q.Accounts == nil }},
		{`{"view":"tokens","account":"111122223333,444455556666","endpoint":"a,b","region":"us-east-1"}`, "",
			func(q *CostQuery) bool {
				return q.View == CostViewTokens && len(q.Accounts) == 2 && len(q.Endpoints) == 2 && q.Region == "us-east-1"
			}},
		{`{"view":"fit","gpusPerCopy":"4"}`, "", func(q *CostQuery) bool { return q.GPUsPerCopy == 4 }},
		{`{"view":"fit","gpusPerCopy":"$fit_gpus"}`, `field "gpusPerCopy" "$fit_gpus" is a variable nothing replaced`, nil},
		{`{"view":"fit","gpusPerCopy":8}`, "", func(q *CostQuery) bool { return q.GPUsPerCopy == 8 }}, // hand-written dashboards
		{`{"view":"fit","gpusPerCopy":2.5}`, `field "gpusPerCopy" "2.5" is not a whole number of GPUs from 1 to 64`, nil},
		{`{"account":"$account"}`, "", func(q *CostQuery) bool { return q.Accounts == nil }},
		{`{"view":"cheap"}`, `field "view" "cheap" is unknown: use one of spend, tokens, idle, prices, fit`, nil},
		{`{"account":"12345"}`, `"12345" is not an AWS account id: use 12 digits`, nil},
		{`{"view":"fit","gpusPerCopy":"0"}`, `field "gpusPerCopy" "0" is not a whole number of GPUs from 1 to 64`, nil},
		{`[1]`, "the query model is not a JSON object", nil},
		{`{"groupByTag":" Team "}`, "", func(q *CostQuery) bool { return q.GroupByTag == "Team" }},
		{`{"view":"idle","groupByTag":"@aws.tag.Cost Center.ü \"x\""}`, "", func(q *CostQuery) bool { return q.GroupByTag == `Cost Center.ü "x"` }},
		{`{"groupByTag":"$tag_key"}`, `field "groupByTag" "$tag_key" is a variable nothing replaced`, nil},
		{`{"view":"prices","groupByTag":"Team"}`, `field "groupByTag" applies to the spend, tokens, idle views, not "prices"`, nil},
	} {
		q, err := ParseCostQuery(backend.DataQuery{RefID: "A", JSON: []byte(tc.json), TimeRange: tr})
		switch {
		case tc.want != "":
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err %v, want %q", tc.json, err, tc.want)
			}
		case err != nil || !tc.check(q):
			t.Errorf("%s: %+v %v", tc.json, q, err)
		}
	}
}

func TestPriceTableSetting(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"priceTable":[{"instanceType":"ml.g5.2xlarge","usdPerHour":1.2},{"instanceType":"ml.g5.2xlarge","region":"eu-west-1","usdPerHour":"1.4"}]}`, ""},
		{`{"priceTable":{"ml.g5.2xlarge":1}}`, "jsonData.priceTable must be a list of"},
		{`{"priceTable":[{"instanceType":"ml.g5.2xlarge"}]}`, "jsonData.priceTable[0].usdPerHour is missing"},
		{`{"priceTable":[{"instanceType":"ml.g5.2xlarge","usdPerHour":1,"region":"us_east_1"}]}`, "jsonData.priceTable[0].region"},
		{`{"priceTable":[{"instanceType":"ml.g5.2xlarge","usdPerHour":-1}]}`, "usdPerHour -1 is out of range"},
	} {
		s, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(tc.json[:len(tc.json)-1] + `,"defaultRegion":"us-east-1"}`)})
		switch {
		case tc.want != "":
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err %v, want %q", tc.json, err, tc.want)
			}
		case err != nil || len(s.PriceTable) != 2 || s.PriceTable[1].USDPerHour != 1.4 || s.PriceTable[1].Region != "eu-west-1":
			t.Errorf("%s: %+v %v", tc.json, s, err)
		}
	}
}
