package health

import (
	"cmp"
	"slices"

	"github.com/inferscope/sagemaker-datasource/pkg/awsapi"
)

// AccountOf is the account id an ARN carries ("" for no ARN or one without an account).
// Alarm, endpoint and inference component ARNs all carry the account that owns them.
func AccountOf(s string) string { return awsapi.AccountOf(s) }

// componentAccount is an inference component's account: its ARN's, else its endpoint's
// (an IC lives in its endpoint's account).
func componentAccount(c awsapi.Component, endpointAccount string) string {
	if a := AccountOf(c.ARN); a != "" {
		return a
	}
	return endpointAccount
}

// named is a name within an account, the key of names that are unique per account and region.
type named struct{ account, name string }

type kindName struct{ kind, name string }

// index is what one region's inventory says about names: the accounts that have each
// endpoint and IC name (several in a monitoring account), and each IC's endpoint.
type index struct {
	accounts   map[kindName][]string
	icEndpoint map[named]string
}

func newIndex(inv awsapi.Inventory) index {
	x := index{accounts: map[kindName][]string{}, icEndpoint: map[named]string{}}
	add := func(k kindName, account string) {
		if !slices.Contains(x.accounts[k], account) {
			x.accounts[k] = append(x.accounts[k], account)
		}
	}
	for _, ep := range inv.Endpoints {
		account := AccountOf(ep.ARN)
		add(kindName{TypeEndpoint, ep.Name}, account)
		for _, c := range ep.Components {
			ca := componentAccount(c, account)
			add(kindName{TypeComponent, c.Name}, ca)
			x.icEndpoint[named{ca, c.Name}] = cmp.Or(c.Endpoint, ep.Name)
		}
	}
	return x
}

// endpointOf is the endpoint of an IC in an account; in an unknown account, that of the
// one account of the region with that IC (none when several have it).
func (x index) endpointOf(account, ic string) string {
	if as := x.accounts[kindName{TypeComponent, ic}]; account == "" && len(as) == 1 {
		account = as[0]
	}
	return x.icEndpoint[named{account, ic}]
}

// candidates are the accounts of the region whose inventory has the target's IC (or,
// naming no IC, its endpoint).
func (x index) candidates(t target) []string {
	if t.component != "" {
		return x.accounts[kindName{TypeComponent, t.component}]
	}
	return x.accounts[kindName{TypeEndpoint, t.endpoint}]
}

// place gives a target whose account its alarm does not say (a PromQL alarm without an
// @aws.account matcher selects the series of every account it can see) its accounts: an
// endpoint or IC is the resource of that name in every account of the region that has one;
// an instance is in its IC's or endpoint's account when only one account has that. What
// the inventory does not place is in the alarm's own account.
func (x index) place(t target, own string) []target {
	if t.account != "" {
		return []target{t}
	}
	cands := x.candidates(t)
	if t.instance != "" || len(cands) == 0 {
		t.account = own
		if len(cands) == 1 {
			t.account = cands[0]
		}
		return []target{t}
	}
	out := make([]target, len(cands))
	for i, a := range cands {
		t.account = a
		out[i] = t
	}
	return out
}
