package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

var (
	standaloneOnce sync.Once
	standaloneErr  error
	clusterOnce    sync.Once
	clusterErr     error
)

// standalone returns a client for IDEM_REDIS_ADDR, or skips.
func standalone(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: testenv.RedisAddr(), DialTimeout: time.Second}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	standaloneOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		standaloneErr = rdb.Ping(ctx).Err()
	})
	if standaloneErr != nil {
		rdb.Close()
		testenv.Need(t, "Redis at "+o.Addr, "start one with `redis-server --daemonize yes` or set IDEM_REDIS_ADDR", standaloneErr)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// cluster returns a client for the Cluster at IDEM_REDIS_CLUSTER_ADDRS, or skips.
func cluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := strings.Split(testenv.Env("IDEM_REDIS_CLUSTER_ADDRS", "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"), ",")
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: time.Second})
	clusterOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		info, err := rdb.ClusterInfo(ctx).Result()
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			err = errString("cluster_state is not ok")
		}
		clusterErr = err
	})
	if clusterErr != nil {
		rdb.Close()
		testenv.Need(t, "Redis Cluster at "+strings.Join(addrs, ","), "start it with `bash scripts/redis-cluster.sh start` (or `make services`) or set IDEM_REDIS_CLUSTER_ADDRS", clusterErr)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

type errString string

func (e errString) Error() string { return string(e) }

// testPrefix is a prefix no other test (or run) uses.
func testPrefix(t testing.TB) string {
	return "idemtest:" + testenv.RandName() + ":"
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newStore makes a store over rdb under a fresh prefix and removes its keys
// and subscription when the test ends.
func newStore(t testing.TB, rdb redis.UniversalClient, opts ...Option) *Store {
	t.Helper()
	prefix := testPrefix(t)
	s, err := New(context.Background(), rdb, append([]Option{WithKeyPrefix(prefix), WithLogger(quietLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		cleanPrefix(rdb, prefix)
	})
	return s
}

func cleanPrefix(rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = scanPrefix(ctx, rdb, prefix, func(ctx context.Context, c *redis.Client, key string) { c.Del(ctx, key) })
}

// scanPrefix calls f with every key under prefix and the client of the
// node that holds it: every master of a Cluster, or the one server. f may
// run concurrently on a Cluster.
func scanPrefix(ctx context.Context, rdb redis.UniversalClient, prefix string, f func(ctx context.Context, c *redis.Client, key string)) error {
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			f(ctx, c, iter.Val())
		}
		return iter.Err()
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *redis.Client:
		return scan(ctx, c)
	}
	return nil
}

// encodeRecordV1 is encodeRecord in encoding version 1, as stores wrote
// records before they carried ClaimedAt (which it drops).
func encodeRecordV1(r idemstore.Record, op uint64) []byte {
	v3 := encodeRecord(r, op)
	v1 := append(v3[:headerLen:headerLen], v3[headerLenV3:]...)
	v1[1] = legacyVersion
	return v1
}

// rawWith reads every value under the store's prefix, whatever its type,
// as a reader of the server (or its RDB files) would.
func rawWith(rdb redis.UniversalClient) func(t *testing.T, s idemstore.Store) [][]byte {
	return func(t *testing.T, s idemstore.Store) [][]byte {
		ctx := context.Background()
		var mu sync.Mutex
		var out [][]byte
		add := func(vs ...string) {
			mu.Lock()
			for _, v := range vs {
				out = append(out, []byte(v))
			}
			mu.Unlock()
		}
		read := func(ctx context.Context, c *redis.Client, k string) {
			add(k)
			switch typ, _ := c.Type(ctx, k).Result(); typ {
			case "string":
				add(c.Get(ctx, k).Val())
			case "hash":
				for f, v := range c.HGetAll(ctx, k).Val() {
					add(f, v)
				}
			case "list":
				add(c.LRange(ctx, k, 0, -1).Val()...)
			case "set":
				add(c.SMembers(ctx, k).Val()...)
			case "zset":
				add(c.ZRange(ctx, k, 0, -1).Val()...)
			case "stream":
				for _, m := range c.XRange(ctx, k, "-", "+").Val() {
					for f, v := range m.Values {
						add(f, fmt.Sprint(v))
					}
				}
			}
		}
		if err := scanPrefix(ctx, rdb, s.(*Store).prefix, read); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

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
