// Package storetest starts a real redis-server for tests: Debian's package, on a free
// loopback port, with a temporary directory and no persistence, stopped when the test ends.
// Fault tests stop, pause (SIGSTOP) and restart it.
package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/inferscope/sagemaker-datasource/pkg/sharedstore/internal/plainping"
)

// Server is a redis-server a test started.
type Server struct {
	Addr  string
	t     testing.TB
	bin   string
	args  []string
	dir   string
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd has exited
	ready func(addr string) error
}

const readyWithin = 10 * time.Second

// Binary is redis-server's path, or "" when it is not installed.
func Binary() string {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	return p
}

// Start starts redis-server with extra arguments (such as "--requirepass", "x"). Without
// redis-server the test fails under CI=true and is skipped otherwise.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return start(t, func(port string) []string { return []string{"--port", port} },
		func(addr string) error { return plainping.Ping(addr, time.Second) }, args)
}

// StartTLS starts redis-server speaking only TLS, with the certificate and key in PEM
// files; clients need no certificate of their own.
func StartTLS(t testing.TB, certFile, keyFile string, args ...string) *Server {
	t.Helper()
	return start(t, func(port string) []string {
		return []string{"--port", "0", "--tls-port", port, "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-auth-clients", "no"}
	}, func(addr string) error { // the port is bound once the server is ready
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}, args)
}

func start(t testing.TB, listen func(port string) []string, ready func(addr string) error, args []string) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		const fix = "redis-server is not installed: apt-get install redis-server (Debian's package; .ci/run installs it)"
		if os.Getenv("CI") == "true" {
			t.Fatal(fix)
		}
		t.Skip(fix)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), ready: ready}
	// A free port can be taken between our probe and the server's bind: try a few.
	var err error
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			continue
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.args = append(append(listen(strconv.Itoa(port)), "--bind", "127.0.0.1", "--dir", s.dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(s.dir, "redis.log")), args...)
		if err = s.start(); err == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("starting redis-server: %v\n%s", err, s.Log())
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	s.cmd = exec.Command(s.bin, s.args...) // #nosec G204 -- the test's own redis-server and arguments
	if err := s.cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(done)
	}()
	s.done = done
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			state := s.cmd.ProcessState
			s.cmd = nil
			return fmt.Errorf("redis-server exited at start: %s", state)
		default:
		}
		if s.ready(s.Addr) == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("redis-server did not answer PING within %s", readyWithin)
}

// StartCluster starts a one-node Redis Cluster owning every slot: enough to check that
// the keys each script touches share a slot (the server refuses CROSSSLOT scripts even
// on one node) and that the cluster client routes them.
func StartCluster(t testing.TB) *Server {
	t.Helper()
	s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	c := redis.NewClient(&redis.Options{Addr: s.Addr, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	for deadline := time.Now().Add(readyWithin); ; time.Sleep(20 * time.Millisecond) {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the one-node cluster is not ok after %s: %v %s", readyWithin, err, info)
		}
	}
}

// Stop kills the server (paused or not) and waits for it to exit, which frees its port.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same port, empty (it persists nothing).
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("restarting redis-server: %v\n%s", err, s.Log())
	}
}

// Pause stops the server's process (SIGSTOP): connections are accepted by the kernel but
// never answered, as with a hung or overloaded server.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatal("redis-server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signalling redis-server: %v", err)
	}
}

// Log is the server's log, for failure messages.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}
