package redisstore

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestNewChecksReachability: New against a refused port fails at once,
// well inside a short ctx, with an error wrapping idem.ErrStoreUnavailable
// and the cause that names the address once. Before, New succeeded and
// the first call failed 3.4s later.
func TestNewChecksReachability(t *testing.T) {
	addr := testenv.RefusedAddr(t)
	clients := map[string]func() redis.UniversalClient{
		"Client": func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr}) },
		"ClusterClient": func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
		},
	}
	for name, mk := range clients {
		t.Run(name, func(t *testing.T) {
			rdb := mk()
			defer rdb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			s, err := New(ctx, rdb, WithLogger(quietLogger()))
			took := time.Since(start)
			if s != nil || err == nil {
				t.Fatalf("New over a refused port = %v, %v; want an error", s, err)
			}
			if took > 500*time.Millisecond {
				t.Errorf("New took %v to fail; want it at once", took)
			}
			if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("New = %v; want it to wrap idem.ErrStoreUnavailable and connection refused", err)
			}
			if n := strings.Count(err.Error(), addr); n != 1 {
				t.Errorf("New = %q names %s %d times, want once", err, addr, n)
			}
			if p := testenv.RepeatedPhrase(err.Error(), 3); p != "" {
				t.Errorf("New = %q repeats %q", err, p)
			}
		})
	}
}

// TestNewBoundedByCtx: against a server that accepts connections but
// never answers, New returns when ctx ends, with an error wrapping both
// idem.ErrStoreUnavailable and the ctx's, naming the address.
func TestNewBoundedByCtx(t *testing.T) {
	addr := silentServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := New(ctx, rdb, WithLogger(quietLogger()))
	if took := time.Since(start); took > time.Second {
		t.Errorf("New took %v with a 100ms ctx", took)
	}
	if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, context.DeadlineExceeded) || strings.Count(err.Error(), addr) != 1 {
		t.Errorf("New = %v; want idem.ErrStoreUnavailable and context.DeadlineExceeded, the address once", err)
	}
}

// TestNewSucceedsOnLiveServer: New's PING leaves nothing behind and the
// store works.
func TestNewSucceedsOnLiveServer(t *testing.T) {
	rdb := standalone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := New(ctx, rdb, WithPrefix(testPrefix(t)), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel() // the store does not keep New's ctx
	if _, err := s.Claim(context.Background(), idem.ClaimRequest{Key: "k", Owner: idem.Token{1}, Lease: time.Second, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// TestUnavailableErrorsSayItOnce: every operation of a store whose server
// refuses connections, and a Guard's call over it, fails with an error
// wrapping idem.ErrStoreUnavailable whose text repeats no phrase (no
// "store unavailable: … store unavailable").
func TestUnavailableErrorsSayItOnce(t *testing.T) {
	addr := testenv.RefusedAddr(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	s, err := build(rdb, []Option{WithLogger(quietLogger())})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	idemtest.Unavailable(t, s, true)
}
