package rcache_test

import (
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/rcache"
	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore"
)

// The shared-store tests (share_test.go, package rcache) need a real sharedstore.Peer,
// but sharedstore imports rcache (its Peer returns rcache.Claim), so only this external
// test package can build one: it hands the constructor to them.
func init() {
	rcache.OpenTestPeer = func(t testing.TB, addr, uid string, timeout time.Duration) rcache.TestPeer {
		t.Helper()
		st, err := sharedstore.Open(sharedstore.Settings{Addresses: []string{addr}, KeyPrefix: "test:", Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		ns, err := sharedstore.NewNamespace("test:", 1, uid, sharedstore.Identity{Account: "123456789012", Region: "us-east-1"})
		if err != nil {
			t.Fatal(err)
		}
		return rcache.TestPeer{
			Peer:     sharedstore.NewPeer(st, ns),
			Key:      func(name string) string { return ns.Key("extent", name) },
			Rejected: func() map[string]int64 { return st.Stats().Rejected },
		}
	}
}
