package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// waitFor runs Wait in the background and returns a channel with its
// result and how long it took.
func waitFor(s *Store, key string, limit time.Duration) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		start := time.Now()
		err := s.Wait(ctx, key)
		out <- waitResult{err, time.Since(start)}
	}()
	return out
}

type waitResult struct {
	err  error
	took time.Duration
}

// TestWaitWakeups: what ends a wait, with a poll interval far longer than
// the test so that only the mechanism under test can end it in time.
func TestWaitWakeups(t *testing.T) {
	rdb := standalone(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		lease time.Duration
		// act ends the owner's run some way; nil lets the lease expire.
		act func(t *testing.T, s *Store, l idemstore.Lease)
		// within: the wait must end this long after act.
		within time.Duration
	}{
		{"complete notifies", time.Minute, func(t *testing.T, s *Store, l idemstore.Lease) {
			if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("1")}); err != nil {
				t.Fatal(err)
			}
		}, time.Second},
		{"release notifies", time.Minute, func(t *testing.T, s *Store, l idemstore.Lease) {
			if err := s.Release(ctx, l); err != nil {
				t.Fatal(err)
			}
		}, time.Second},
		{"delete notifies", time.Minute, func(t *testing.T, s *Store, l idemstore.Lease) {
			if err := s.Delete(ctx, l.Key); err != nil {
				t.Fatal(err)
			}
		}, time.Second},
		{"lease expiry is timed by the server clock", 300 * time.Millisecond, nil, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t, rdb, WithPollInterval(time.Hour))
			key := "w:" + tt.name
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: tt.lease, TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			l := idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: res.Fence, Duration: tt.lease, TTL: time.Minute}
			done := waitFor(s, key, 10*time.Second)
			waitListening(s, key)
			start := time.Now()
			if tt.act != nil {
				select {
				case r := <-done:
					t.Fatalf("Wait returned before the owner finished: %v", r.err)
				case <-time.After(50 * time.Millisecond):
				}
				tt.act(t, s, l)
			}
			r := <-done
			if r.err != nil {
				t.Fatalf("Wait = %v", r.err)
			}
			if took := time.Since(start); took > tt.within {
				t.Fatalf("Wait ended %v after the event, want within %v", took, tt.within)
			}
		})
	}
}

// TestWaitPollsWhenNotificationIsLost: a completion that publishes nothing
// (here written behind the store's back) is still seen at the next poll.
func TestWaitPollsWhenNotificationIsLost(t *testing.T) {
	rdb := standalone(t)
	ctx := context.Background()
	s := newStore(t, rdb, WithPollInterval(200*time.Millisecond))
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	done := waitFor(s, "k", 10*time.Second)
	waitListening(s, "k")
	now := time.Now()
	silent := encodeRecord(idemstore.Record{State: idemstore.StateCompleted, Owner: idemstore.Token{1}, Fence: res.Fence,
		LeaseUntil: now, ExpiresAt: now.Add(time.Minute), UpdatedAt: now}, 1)
	if err := rdb.Set(ctx, s.RecordKey("k"), silent, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the waiter did not notice a silent completion by polling")
	}
}

// TestWaitSharesOneSubscription: many waiters on many keys hold one pub/sub
// connection between them, and Close ends them all. A private server, so
// the count of pub/sub clients is ours alone.
func TestWaitSharesOneSubscription(t *testing.T) {
	s, rdb := privateStore(t, WithPollInterval(time.Hour))
	ctx := context.Background()
	const keys, perKey = 5, 4
	var results []<-chan waitResult
	for k := 0; k < keys; k++ {
		key := "k" + strconv.Itoa(k)
		if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		for w := 0; w < perKey; w++ {
			results = append(results, waitFor(s, key, time.Minute))
		}
		waitListening(s, key)
	}
	clients, err := rdb.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var pubsub []string
	for _, line := range strings.Split(strings.TrimSpace(clients), "\n") {
		if !strings.Contains(line, " sub=0 ") || !strings.Contains(line, " psub=0 ") {
			pubsub = append(pubsub, line)
		}
	}
	if len(pubsub) != 1 || !strings.Contains(pubsub[0], " sub="+strconv.Itoa(keys)+" ") {
		t.Fatalf("%d waiters on %d keys use %d subscribed connections, want one subscribed to %d channels:\n%s",
			keys*perKey, keys, len(pubsub), keys, strings.Join(pubsub, "\n"))
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Close() }()
	for _, r := range results {
		select {
		case res := <-r:
			if !errors.Is(res.err, idem.ErrStoreUnavailable) {
				t.Errorf("Wait after Close = %v, want ErrStoreUnavailable", res.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end a waiter")
		}
	}
	wg.Wait()
}
