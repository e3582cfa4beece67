package storetest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/internal/plainping"
)

// outcome records how Start ended a test, without ending this one.
type outcome struct {
	testing.TB
	skipped, failed string
}

func (o *outcome) Skip(args ...any)  { o.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (o *outcome) Fatal(args ...any) { o.failed = fmt.Sprint(args...); runtime.Goexit() }

func startWith(t *testing.T) *outcome {
	o := &outcome{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(o)
	}()
	<-done
	return o
}

// TestWithoutRedisServer: no redis-server on PATH fails the test under CI=true and skips
// it otherwise, both times with the fix.
func TestWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "true")
	o := startWith(t)
	assert.Contains(t, o.failed, "apt-get install redis-server")
	assert.Empty(t, o.skipped)

	t.Setenv("CI", "")
	o = startWith(t)
	assert.Contains(t, o.skipped, "apt-get install redis-server")
	assert.Empty(t, o.failed)
}

// TestStopPauseRestart: the harness' own controls do what the fault tests rely on.
func TestStopPauseRestart(t *testing.T) {
	s := Start(t)
	assert.NoError(t, plainping.Ping(s.Addr, time.Second))
	s.Pause()
	assert.Error(t, plainping.Ping(s.Addr, 100*time.Millisecond), "a paused server does not answer")
	s.Resume()
	assert.NoError(t, plainping.Ping(s.Addr, time.Second))
	s.Stop()
	assert.Error(t, plainping.Ping(s.Addr, time.Second), "a stopped server's port is closed")
	s.Restart()
	assert.NoError(t, plainping.Ping(s.Addr, time.Second), "restarted on the same address")
}
