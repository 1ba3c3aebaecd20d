package reliability

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every line with itself.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "ping\n" {
		return 0, errors.New("echo mismatch: " + line)
	}
	return time.Since(start), nil
}

// TestFaultProxy checks each fault the proxy injects, so that a scenario
// passing under faults is not a proxy that silently passed everything.
func TestFaultProxy(t *testing.T) {
	p, err := NewFaultProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	c := dial()
	if _, err := roundTrip(c, time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}

	p.Set(Latency, 150*time.Millisecond)
	if d, err := roundTrip(c, 2*time.Second); err != nil || d < 300*time.Millisecond {
		t.Fatalf("latency: round trip %s, %v; want ≥ 300ms (150ms each way)", d, err)
	}

	p.Set(Blackhole, 0)
	if _, err := roundTrip(c, 200*time.Millisecond); err == nil {
		t.Fatal("blackhole: round trip succeeded")
	}
	// Healed, the held bytes flow again: the echo of the timed-out ping
	// arrives, then the next one.
	p.Heal()
	if _, err := roundTrip(c, time.Second); err != nil {
		t.Fatalf("after heal: %v", err)
	}

	p.Reset()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	// Echoes still in flight from before the reset may arrive first: read
	// past them to the reset.
	var rerr error
	for rerr == nil {
		_, rerr = c.Read(make([]byte, 1))
	}
	if !errors.Is(rerr, syscall.ECONNRESET) && !errors.Is(rerr, io.EOF) {
		t.Fatalf("reset: read got %v, want a connection reset", rerr)
	}

	p.Set(Refuse, 0)
	// The proxy resets a connection as soon as it accepts it: the reset
	// can reach the dial itself (connection reset by peer) or the first
	// round trip; either is a refusal.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		t.Cleanup(func() { c2.Close() })
		if _, err := roundTrip(c2, time.Second); err == nil {
			t.Fatal("refuse: round trip succeeded")
		}
	}
	p.Heal()
	if _, err := roundTrip(dial(), time.Second); err != nil {
		t.Fatalf("new connection after heal: %v", err)
	}
	if p.Resets != 1 || p.Blackholes != 1 || p.Spikes != 1 {
		t.Fatalf("counters: resets %d blackholes %d spikes %d, want 1 each", p.Resets, p.Blackholes, p.Spikes)
	}
}
