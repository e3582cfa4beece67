package simulator

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	sc "github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/rig/fleet"
)

// Random layouts (fixed seeds): the default fleet moved to a drawn region with each endpoint
// in a drawn account. Every series carries that region and its endpoint's account, and
// resource ARNs name the same account.
func TestSeriesCarryTheirEndpointsAccountAndRegion(t *testing.T) {
	regions := []string{"us-east-1", "us-west-2", "eu-west-1", "ap-southeast-2", "eu-central-1"}
	accounts := []string{"111111111111", "222222222222", "333333333333"}
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		f := fleet.Default().InRegion(regions[rng.IntN(len(regions))], "")
		want := map[string]string{} // endpoint or IC name → account
		for i := range f.Endpoints {
			e := &f.Endpoints[i]
			if rng.IntN(3) > 0 { // some keep the fleet's account
				e.Account = accounts[rng.IntN(len(accounts))]
			}
			want[e.Name] = f.AccountOf(e)
			for _, ic := range e.InferenceComponents {
				want[ic.Name] = f.AccountOf(e)
			}
		}
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("seed %d %s %v", seed, f.Region, f.Accounts()), func(t *testing.T) {
			db := backfillFleet(t, f, "ice-exhaustion", 2) // ICE events are fleet-wide series: they must carry the account too
			seen := map[string]bool{}
			eachSeries(t, db, func(l labels.Labels) {
				if got := l.Get(sc.LabelRegion); got != f.Region {
					t.Fatalf("%s: region %q, want %q", l, got, f.Region)
				}
				owner := l.Get(sc.LabelEndpoint)
				for _, n := range []string{sc.DimEndpointName, sc.LabelInferenceComp, sc.DimInferenceComponentName} {
					if owner == "" {
						owner = l.Get(n)
					}
				}
				acct, ok := want[owner]
				if !ok {
					t.Fatalf("%s: no endpoint or IC label to check the account by", l)
				}
				if got := l.Get(sc.LabelAccount); got != acct {
					t.Fatalf("%s: account %q, want %q", l, got, acct)
				}
				if arn := l.Get(sc.LabelResourceID); arn != "" && !strings.HasPrefix(arn, "arn:aws:sagemaker:"+f.Region+":"+acct+":") {
					t.Fatalf("%s: resource ARN not in %s/%s", l, f.Region, acct)
				}
				seen[l.Get(labels.MetricName)+"|"+acct] = true
			})
			if !slices.ContainsFunc(f.Accounts(), func(a string) bool { return seen[sc.ICECount+"|"+a] }) {
				t.Errorf("no ICE event series seen")
			}
			for _, a := range f.Accounts() {
				if !seen[sc.NodeMemTotal+"|"+a] {
					t.Errorf("account %s has no node series", a)
				}
			}
		})
	}
}

func eachSeries(t *testing.T, db *tsdb.DB, f func(labels.Labels)) {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	set := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	for set.Next() {
		f(set.At().Labels())
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
}
