package redisstore

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// faultProxy is a loopback TCP proxy in front of a Redis server that tests
// steer: it can drop the next replies with a connection reset (the request
// reached the server and ran, the client never hears back) and add latency
// to everything it forwards.
type faultProxy struct {
	ln     net.Listener
	target string

	mu         sync.Mutex
	latency    time.Duration
	cutReplies int // replies still to cut; < 0 cuts every reply
	cut        int // replies cut so far
	conns      map[net.Conn]struct{}
	wg         sync.WaitGroup
}

func newFaultProxy(t testing.TB, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

// CutReplies makes the proxy reset the connection instead of forwarding
// the next n replies (n < 0: all of them until called again with 0).
func (p *faultProxy) CutReplies(n int) {
	p.mu.Lock()
	p.cutReplies = n
	p.mu.Unlock()
}

// Cut returns how many replies the proxy has cut.
func (p *faultProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// SetLatency delays every chunk forwarded in either direction by d.
func (p *faultProxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			reset(c)
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(s, c, false)
		go p.pipe(c, s, true)
	}
}

// pipe copies from src to dst; reply says src is the server.
func (p *faultProxy) pipe(dst, src net.Conn, reply bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			lat := p.latency
			cut := reply && p.cutReplies != 0
			if cut {
				p.cut++
				if p.cutReplies > 0 {
					p.cutReplies--
				}
			}
			p.mu.Unlock()
			if cut {
				reset(dst)
				reset(src)
				return
			}
			if lat > 0 {
				time.Sleep(lat)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				reset(src)
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				reset(dst)
			} else {
				dst.Close()
			}
			return
		}
	}
}

// reset closes c with an RST rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		reset(c)
	}
	p.mu.Unlock()
	p.wg.Wait()
}
