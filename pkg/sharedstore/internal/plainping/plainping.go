// Package plainping asks a Redis-protocol server for PONG over plain TCP: the test harness
// waits for its server with it, and the health check uses it to tell a server without TLS
// (which never answers a TLS handshake) from a slow one.
package plainping

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"time"
)

// Ping sends an inline PING. A server that wants a password (NOAUTH) is up too.
func Ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
