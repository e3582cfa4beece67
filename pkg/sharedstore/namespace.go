package sharedstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
)

// Identity is who a data source is to AWS: what decides which answers it may see. It
// holds no secret (no key, token or signature); only its hash goes into keys.
type Identity struct {
	Account    string // the AWS account id
	Principal  string // the stable caller: the role ARN assumed, or the IAM user's ARN; empty for the default chain
	RoleARN    string // jsonData.assumeRoleArn
	ExternalID string
	Endpoint   string // a custom endpoint (an emulator, a VPC endpoint); empty for AWS' own
	Region     string
}

// hash is the identity's key part: changing any field changes it, so two data sources
// whose credentials differ in any way never share a key.
func (id Identity) hash() string {
	h := sha256.New()
	h.Write([]byte("inferscope-identity-v1"))
	for _, f := range []string{id.Account, id.Principal, id.RoleARN, id.ExternalID, id.Endpoint, id.Region} {
		// Length-prefixed, so ("ab","c") and ("a","bc") differ.
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Namespace is one data source's part of the store: a key prefix, its Grafana org, its
// uid and the hash of its credential identity.
type Namespace struct {
	base string // prefix + "o<org>:<uid>:<identity hash>:"
}

var uidPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// NewNamespace builds a data source's namespace. The uid is Grafana's (letters, digits,
// '-' and '_'), checked so that it cannot smuggle a hash tag or a separator into keys.
func NewNamespace(prefix string, orgID int64, uid string, id Identity) (Namespace, error) {
	if !uidPattern.MatchString(uid) {
		return Namespace{}, fmt.Errorf("data source uid %q is not a Grafana uid (1-40 letters, digits, '-' or '_'): the shared store cannot key its entries", uid)
	}
	return Namespace{base: prefix + "o" + strconv.FormatInt(orgID, 10) + ":" + uid + ":" + id.hash() + ":"}, nil
}

// Key is the store key of the entry kind/name (kind such as "extent" or "labels"; name the
// entry's own key, such as an expression and a step). The name is hashed: keys stay short
// and the hash is the cluster hash tag, so entries spread over a cluster's nodes while an
// entry and its lease (LeaseKey) share a node, as the scripts that touch both require.
func (ns Namespace) Key(kind, name string) string {
	sum := sha256.Sum256([]byte(name))
	return ns.base + kind + ":{" + hex.EncodeToString(sum[:16]) + "}"
}

// LeaseKey is the key of the lease on the entry at key: same hash tag.
func LeaseKey(key string) string { return key + ":lease" }

// BudgetKey names one of an AWS account's limits in one region: shared by every replica
// and every data source of the account, whatever their org.
type BudgetKey struct {
	// Account is the 12-digit account id, or, when it is not known, "cred-" and a credential
	// identity's hash (NewBudget): such a budget is per credential, not per account.
	Account, Region string
	Kind            string // "query", "discovery" (promclient.Class) or KindLookupEvents
}

// credentialScope prefixes the identity hash that stands for an unknown account.
const credentialScope = "cred-"

var (
	accountPattern = regexp.MustCompile(`^[0-9]{12}$`)
	scopePattern   = regexp.MustCompile(`^([0-9]{12}|` + credentialScope + `[0-9a-f]{24})$`)
	regionPattern  = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	kindPattern    = regexp.MustCompile(`^[a-z]{1,16}$`)
)

// budgetPrefix starts every budget key, whatever the data source's keyPrefix: an account's
// limits are one budget however many prefixes its data sources use.
const budgetPrefix = DefaultKeyPrefix + "budget:"

func (b BudgetKey) key(what string) (string, error) {
	if !scopePattern.MatchString(b.Account) || !regionPattern.MatchString(b.Region) || !kindPattern.MatchString(b.Kind) {
		return "", fmt.Errorf("budget key %q/%q/%q: the account must be 12 digits (or a credential scope from NewBudget), the region an AWS region such as us-east-1, the kind lower-case letters such as query", b.Account, b.Region, b.Kind)
	}
	// One hash tag per account and region: its limits live on one node.
	return budgetPrefix + "{" + b.Account + ":" + b.Region + "}:" + b.Kind + ":" + what, nil
}
