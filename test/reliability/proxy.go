package reliability

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// FaultMode is what a FaultProxy does to traffic.
type FaultMode int

const (
	// Pass forwards traffic unchanged.
	Pass FaultMode = iota
	// Blackhole stops forwarding in both directions (bytes wait in the
	// kernel's buffers, as on a partitioned link) and leaves new
	// connections hanging; when healed, what is still connected flows again.
	Blackhole
	// Latency delays every chunk of traffic by the proxy's delay.
	Latency
	// Refuse resets new connections as soon as they are accepted.
	Refuse
)

// String is the mode's name, as the report shows it.
func (m FaultMode) String() string {
	return [...]string{"pass", "blackhole", "latency", "refuse"}[m]
}

// FaultProxy is a loopback TCP proxy that injects network faults between
// store clients and their server: connection resets, blackholes and latency
// spikes. It listens on 127.0.0.1 only.
type FaultProxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	mode   FaultMode
	delay  time.Duration
	change chan struct{} // closed and replaced on every mode change
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup

	// Counters of injected faults, for the report.
	Resets, Blackholes, Spikes int
}

// NewFaultProxy listens on a free loopback port and forwards to upstream.
func NewFaultProxy(upstream string) (*FaultProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listen: %w", err)
	}
	p := &FaultProxy{ln: ln, upstream: upstream, change: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address (host:port).
func (p *FaultProxy) Addr() string { return p.ln.Addr().String() }

// Set switches the proxy's mode; delay applies to Latency.
func (p *FaultProxy) Set(m FaultMode, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch m {
	case Blackhole:
		p.Blackholes++
	case Latency:
		p.Spikes++
	}
	p.mode, p.delay = m, delay
	close(p.change)
	p.change = make(chan struct{})
}

// Heal returns to Pass.
func (p *FaultProxy) Heal() { p.Set(Pass, 0) }

// Reset aborts every open connection with a TCP RST (SO_LINGER 0), as a
// crashed middlebox or a restarted server would.
func (p *FaultProxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Resets++
	for c := range p.conns {
		abort(c)
		delete(p.conns, c)
	}
}

// Close stops the proxy and closes every connection.
func (p *FaultProxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mode = Pass
	close(p.change)
	p.change = make(chan struct{})
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func abort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func (p *FaultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *FaultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.mode == Refuse
		p.mu.Unlock()
		if refuse {
			abort(c)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *FaultProxy) serve(client net.Conn) {
	defer p.wg.Done()
	// A blackhole also swallows new connections: wait for it to lift.
	if !p.gate() {
		abort(client)
		return
	}
	server, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
	if err != nil {
		abort(client)
		return
	}
	if !p.track(client) || !p.track(server) {
		abort(client)
		abort(server)
		return
	}
	done := make(chan struct{}, 2)
	pump := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if !p.gate() {
					return
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go pump(server, client)
	go pump(client, server)
	<-done
	// One side ended: end the other too (abort if it was a reset).
	abort(client)
	abort(server)
	<-done
	p.untrack(client)
	p.untrack(server)
}

// gate blocks while the proxy blackholes traffic and sleeps the delay while
// it adds latency. It reports false once the proxy is closed.
func (p *FaultProxy) gate() bool {
	for {
		p.mu.Lock()
		mode, delay, change, closed := p.mode, p.delay, p.change, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		switch mode {
		case Blackhole:
			<-change
			continue
		case Latency:
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-change:
				t.Stop()
			}
		}
		return true
	}
}
