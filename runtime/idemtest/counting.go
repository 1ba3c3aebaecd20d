package idemtest

import (
	"context"
	"sync"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// CountingStore is a memory store that counts the calls reaching it by
// operation, for tests that bound how many round trips a layer over a
// store (the HTTP middleware, the webhook receiver) makes.
type CountingStore struct {
	*memstore.Store
	mu sync.Mutex
	n  map[string]int64
}

// NewCountingStore returns a CountingStore over a fresh memory store.
func NewCountingStore() *CountingStore {
	return &CountingStore{Store: memstore.New(), n: map[string]int64{}}
}

// Calls is how many calls of the named operations ("claim", "heartbeat",
// "complete", "fail", "release", "get", "delete", "wait") reached the
// store; with none named, of all of them.
func (s *CountingStore) Calls(ops ...string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum int64
	if len(ops) == 0 {
		for _, n := range s.n {
			sum += n
		}
	}
	for _, op := range ops {
		sum += s.n[op]
	}
	return sum
}

func (s *CountingStore) count(op string) {
	s.mu.Lock()
	s.n[op]++
	s.mu.Unlock()
}

// Claim counts a "claim".
func (s *CountingStore) Claim(ctx context.Context, r idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	s.count("claim")
	return s.Store.Claim(ctx, r)
}

// Heartbeat counts a "heartbeat".
func (s *CountingStore) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	s.count("heartbeat")
	return s.Store.Heartbeat(ctx, l)
}

// Complete counts a "complete".
func (s *CountingStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	s.count("complete")
	return s.Store.Complete(ctx, l, r)
}

// Fail counts a "fail".
func (s *CountingStore) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	s.count("fail")
	return s.Store.Fail(ctx, l, r)
}

// Release counts a "release".
func (s *CountingStore) Release(ctx context.Context, l idemstore.Lease) error {
	s.count("release")
	return s.Store.Release(ctx, l)
}

// Get counts a "get".
func (s *CountingStore) Get(ctx context.Context, key string) (idemstore.Record, error) {
	s.count("get")
	return s.Store.Get(ctx, key)
}

// Delete counts a "delete".
func (s *CountingStore) Delete(ctx context.Context, key string) error {
	s.count("delete")
	return s.Store.Delete(ctx, key)
}

// Wait counts a "wait".
func (s *CountingStore) Wait(ctx context.Context, key string) error {
	s.count("wait")
	return s.Store.Wait(ctx, key)
}
