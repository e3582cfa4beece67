package emulator

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/storage"
)

// accountServer is one emulator (a region, a listener) of an account, on its own loopback port.
func accountServer(t *testing.T, cfg Config, db storage.Queryable) (*Server, string) {
	t.Helper()
	cfg.Now = func() time.Time { return t0 }
	s, err := New(cfg, db)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// TestAccountConcurrency: 40 queries held in storage, spread over two regions of one account
// at CloudWatch's real limits (30 in flight per account). Sharing the account's gates answers
// exactly the 10 beyond 30 with 429 and counts them on the account, while another account
// still answers; with gates of their own each region holds its 20.
func TestAccountConcurrency(t *testing.T) {
	const held, limit = 40, 30
	cases := []struct {
		name     string
		accounts *Accounts
		rejected int
	}{
		{"one account across regions", &Accounts{}, held - limit},
		{"gates of their own", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{t: t0} // frozen: 40 queries stay within the 300 TPS burst
			g := &gatedQueryable{Queryable: openDB(t), entered: make(chan chan struct{})}
			var servers []*Server
			var urls []string
			for _, region := range []string{"us-east-1", "eu-west-1"} {
				s, url := accountServer(t, Config{Region: region, Account: "111122223333", Accounts: tc.accounts, RateClock: clk.now}, g)
				servers, urls = append(servers, s), append(urls, url)
			}
			_, other := accountServer(t, Config{Account: "444455556666", Accounts: tc.accounts, RateClock: clk.now}, newSeededDB(t))

			statuses := make(chan int, held)
			var wg sync.WaitGroup
			for i := range held {
				wg.Go(func() {
					resp, err := http.Get(urls[i%2] + "/api/v1/query?query=up")
					if err != nil {
						t.Errorf("query %d: %v", i, err)
						statuses <- 0
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					statuses <- resp.StatusCode
				})
			}
			// Every query is either in storage (admitted) or answered (rejected) before any is let go.
			var releases []chan struct{}
			got := map[int]int{}
			for len(releases)+got[http.StatusTooManyRequests] < held {
				select {
				case rel := <-g.entered:
					releases = append(releases, rel)
				case st := <-statuses:
					got[st]++
					if st != http.StatusTooManyRequests {
						t.Fatalf("a query finished with %d while the others are held", st)
					}
				case <-time.After(time.Minute):
					t.Fatalf("stuck: %d held, %v answered", len(releases), got)
				}
			}
			if got[http.StatusTooManyRequests] != tc.rejected || len(releases) != held-tc.rejected {
				t.Errorf("%d rejected with 429 and %d held, want %d and %d", got[http.StatusTooManyRequests], len(releases), tc.rejected, held-tc.rejected)
			}
			// The other account's budget is its own.
			if r := call(t, nil, other, "GET", "/api/v1/query?query=1", nil); r.status != http.StatusOK {
				t.Errorf("another account's query while this one is full: %d %s", r.status, r.raw)
			}
			g.open.Store(true)
			for _, rel := range releases {
				close(rel)
			}
			wg.Wait()
			close(statuses)
			for st := range statuses {
				got[st]++
			}
			if got[http.StatusOK] != held-tc.rejected {
				t.Errorf("answers %v, want %d × 200", got, held-tc.rejected)
			}

			if tc.accounts == nil {
				for i, s := range servers {
					if c := s.Account().Counts(); c != (AccountCounts{Query: ClassCounts{Admitted: held / 2}}) {
						t.Errorf("region %d on gates of its own counted %+v, want its %d queries admitted", i, c, held/2)
					}
				}
				return
			}
			want := AccountCounts{Query: ClassCounts{Admitted: limit, Rejected: held - limit}}
			for i, s := range servers {
				if s.Account() != tc.accounts.Account("111122223333") {
					t.Fatalf("region %d enforces gates apart from its account's", i)
				}
			}
			if c := tc.accounts.Account("111122223333").Counts(); c != want {
				t.Errorf("the account counted %+v, want %+v", c, want)
			}
			if ids := tc.accounts.IDs(); strings.Join(ids, " ") != "111122223333 444455556666" {
				t.Errorf("registry holds %v", ids)
			}
			if c := tc.accounts.Account("444455556666").Counts(); c != (AccountCounts{Query: ClassCounts{Admitted: 1}}) {
				t.Errorf("the other account counted %+v, want its one query admitted", c)
			}
		})
	}
}

// newSeededDB is a TSDB holding the seeded series.
func newSeededDB(t *testing.T) storage.Queryable {
	db := openDB(t)
	seed(t, db)
	return db
}

// TestAccountRate drives two regions of one account with the rate clock: the account's 300
// query TPS and 10 discovery TPS are spent across both, the excess answered 422 and counted,
// and another account in the same registry keeps its own buckets.
func TestAccountRate(t *testing.T) {
	clk := &clock{t: t0}
	accounts := &Accounts{}
	db := newSeededDB(t)
	var urls []string
	for _, region := range []string{"us-east-1", "eu-west-1"} {
		_, url := accountServer(t, Config{Region: region, Account: "111122223333", Accounts: accounts, RateClock: clk.now}, db)
		urls = append(urls, url)
	}
	_, other := accountServer(t, Config{Account: "444455556666", Accounts: accounts, RateClock: clk.now}, db)
	q, d := "/api/v1/query?query=1", "/api/v1/labels"

	statuses := func(path string, n int) map[int]int {
		out := map[int]int{}
		for i := range n {
			out[call(t, nil, urls[i%2], "GET", path, nil).status]++
		}
		return out
	}
	steps := []struct {
		advance time.Duration
		path    string
		n       int
		want    map[int]int
	}{
		{0, q, 302, map[int]int{200: 300, 422: 2}},
		{0, d, 12, map[int]int{200: 10, 422: 2}},
		{100 * time.Millisecond, q, 31, map[int]int{200: 30, 422: 1}}, // 30 tokens back
		{0, d, 2, map[int]int{200: 1, 422: 1}},                        // and 1 discovery token
	}
	acct := accounts.Account("111122223333")
	var afterFirst AccountCounts
	for i, s := range steps {
		clk.add(s.advance)
		if got := statuses(s.path, s.n); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Fatalf("step %d: %d × %s over both regions answered %v, want %v", i, s.n, s.path, got, s.want)
		}
		if i == 0 {
			afterFirst = acct.Counts()
		}
	}
	want := AccountCounts{Query: ClassCounts{Admitted: 330, Throttled: 3}, Discovery: ClassCounts{Admitted: 11, Throttled: 3}}
	if got := acct.Counts(); got != want {
		t.Errorf("account counted %+v, want %+v", got, want)
	}
	// A phase's counts: the steps after the first.
	phase := AccountCounts{Query: ClassCounts{Admitted: 30, Throttled: 1}, Discovery: ClassCounts{Admitted: 11, Throttled: 3}}
	if got := acct.Counts().Sub(afterFirst); got != phase {
		t.Errorf("counted since the first step %+v, want %+v", got, phase)
	}
	// The other account has spent nothing.
	if r := call(t, nil, other, "GET", d, nil); r.status != http.StatusOK {
		t.Errorf("another account's discovery call: %d %s", r.status, r.raw)
	}
	if got := accounts.Account("444455556666").Counts(); got != (AccountCounts{Discovery: ClassCounts{Admitted: 1}}) {
		t.Errorf("the other account counted %+v", got)
	}
}

// TestAccountLimitsDisagree: one account has one set of limits, so a server asking for others
// is refused with both named.
func TestAccountLimitsDisagree(t *testing.T) {
	accounts := &Accounts{}
	db := openDB(t)
	if _, err := New(Config{Account: "111122223333", Accounts: accounts}, db); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{Account: "111122223333", Accounts: accounts, Limits: Limits{QueryConcurrency: 5}}, db)
	for _, want := range []string{"account 111122223333", "query 300 TPS and 30 in flight", "query 300 TPS and 5 in flight", "same Limits"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want one containing %q", err, want)
		}
	}
	// Another account of the same registry may have its own.
	if _, err := New(Config{Account: "444455556666", Accounts: accounts, Limits: Limits{QueryConcurrency: 5}}, db); err != nil {
		t.Errorf("another account with other limits: %v", err)
	}
}
