package redisstore

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
)

// startSentinel runs a private Sentinel (redis-server --sentinel) that
// monitors master as "idem-master", and returns its address.
func startSentinel(t *testing.T, master *privateRedis) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor idem-master 127.0.0.1 %d 1\n",
		port, dir, filepath.Join(dir, "sentinel.log"), master.port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer sc.Close()
	for i := 0; i < 100; i++ {
		if a, err := sc.GetMasterAddrByName(context.Background(), "idem-master").Result(); err == nil && len(a) == 2 {
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
	t.Fatalf("sentinel did not start:\n%s", log)
	return ""
}

// TestSentinel: the store over a Sentinel failover client (a private master
// and Sentinel): first execution, replay, waiting duplicates woken by
// pub/sub, and the start-up policy check.
func TestSentinel(t *testing.T) {
	master := startPrivateRedis(t)
	sentinel := startSentinel(t, master)
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{MasterName: "idem-master", Addrs: []string{sentinel}})
	t.Cleanup(func() { rdb.Close() })
	s, err := New(context.Background(), rdb, WithLogger(quietLogger()), WithEvictionCheck(EvictionRefuse))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "sentinel.f", Lease: 5 * time.Second, OnDuplicate: idem.DuplicateWait}
	var runs atomic.Int64
	release := make(chan struct{})
	do := func(g *idem.Guard) (string, error) {
		c := g.Begin(spec, "k")
		return idem.Do(context.Background(), c, func(context.Context) (string, error) {
			runs.Add(1)
			<-release
			return "v", nil
		})
	}
	// Two Guards: the second stands for another process, so it reaches
	// the store (a Guard answers its own duplicates in process).
	other := idem.NewGuard(s)
	var wg sync.WaitGroup
	results := make([]string, 3)
	errs := make([]error, 3)
	wg.Add(1)
	go func() { defer wg.Done(); results[0], errs[0] = do(g) }()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], errs[i] = do(other) }()
	}
	time.Sleep(100 * time.Millisecond) // the duplicates are waiting
	close(release)
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i] != "v" {
			t.Fatalf("call %d = %q, %v", i, results[i], errs[i])
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("the function ran %d times, want 1", runs.Load())
	}
	if got, err := do(idem.NewGuard(s)); err != nil || got != "v" || runs.Load() != 1 {
		t.Fatalf("replay = %q, %v after %d runs", got, err, runs.Load())
	}
}
