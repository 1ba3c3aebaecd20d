package idemtest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// OutageStore is a memory store that can be made unreachable, for the
// store-unavailable paths of code over a store (the HTTP middleware, the
// queue consumers): while ClaimDown is set its claims fail, and while
// CompleteDown is set its completions do, with the plain errors of a
// dropped connection (the Guard is what must call them unavailable).
type OutageStore struct {
	*memstore.Store
	ClaimDown, CompleteDown atomic.Bool
}

// NewOutageStore returns an OutageStore over a fresh memory store, up.
func NewOutageStore() *OutageStore { return &OutageStore{Store: memstore.New()} }

// SetDown sets ClaimDown and CompleteDown both.
func (s *OutageStore) SetDown(down bool) {
	s.ClaimDown.Store(down)
	s.CompleteDown.Store(down)
}

// Claim fails while ClaimDown is set.
func (s *OutageStore) Claim(ctx context.Context, r idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	if s.ClaimDown.Load() {
		return idemstore.ClaimResult{}, errors.New("dial tcp 127.0.0.1:1: connection refused")
	}
	return s.Store.Claim(ctx, r)
}

// Complete fails while CompleteDown is set.
func (s *OutageStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	if s.CompleteDown.Load() {
		return errors.New("connection reset")
	}
	return s.Store.Complete(ctx, l, r)
}
