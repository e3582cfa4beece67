package dstest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/inferscope/sagemaker-datasource/rig/stack"
)

// Backfilling a fleet is most of an integration test's time; tests that only read a stack
// (no Live, no counts, no writes) share one per distinct Options for the package's run.
var shared struct {
	mu     sync.Mutex
	stacks map[string]*sharedStack
}

type sharedStack struct {
	once sync.Once
	st   *stack.Stack
	err  error
}

// Shared is a stack for o started once per package run and shared by every test that asks
// for the same options; Main closes it after the last test. History and End default to
// Stack's (3 h ending at stack.PinnedEnd). The tests using it must only read it: its
// request counts and rate limits are the sum of theirs, so a test that counts requests or
// needs a fresh rate limit starts its own with Stack. Skipped with -short.
func Shared(t testing.TB, o stack.Options) *stack.Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped with -short: backfills a simulated fleet into a TSDB and serves the emulator")
	}
	if o.Live {
		t.Fatal("dstest.Shared: a live stack changes under the tests sharing it; start it with Stack")
	}
	if o.History == 0 {
		o.History = 3 * time.Hour
	}
	if o.End.IsZero() {
		o.End = stack.PinnedEnd
	}
	key, err := optionsKey(o)
	if err != nil {
		t.Fatal(err)
	}
	shared.mu.Lock()
	if shared.stacks == nil {
		shared.stacks = map[string]*sharedStack{}
	}
	s := shared.stacks[key]
	if s == nil {
		s = &sharedStack{}
		shared.stacks[key] = s
	}
	shared.mu.Unlock()
	s.once.Do(func() { s.st, s.err = stack.Start(context.Background(), o) })
	if s.err != nil {
		t.Fatalf("starting the shared emulator stack: %v", s.err)
	}
	return s.st
}

// optionsKey names o by value: the fleet by its contents, not its address.
func optionsKey(o stack.Options) (string, error) {
	f, err := json.Marshal(o.Fleet)
	if err != nil {
		return "", fmt.Errorf("dstest.Shared: encoding the fleet: %w", err)
	}
	o.Fleet = nil
	return fmt.Sprintf("%#v %s", o, f), nil
}

// Main runs the package's tests and then closes the stacks they shared; a package using
// Shared has `func TestMain(m *testing.M) { os.Exit(dstest.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, s := range shared.stacks {
		if s.st != nil {
			_ = s.st.Close()
		}
	}
	shared.stacks = nil
	return code
}
