// Package leasettl: the effect of lease= (heartbeats keep a long call's
// claim) and ttl= (a finished record expires, and the call runs again).
package leasettl

import (
	"context"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

// Long runs for several leases; heartbeats every lease/3 keep it owned.
//
//idem:lease=30ms ttl=1h
func Long(ctx context.Context, id string) (int64, error) {
	n := runs.Add(1)
	select {
	case <-time.After(120 * time.Millisecond):
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
	return n, nil
}

// Short's records live 50ms.
//
//idem:ttl=50ms
func Short(ctx context.Context, id string) (int64, error) {
	return runs.Add(1), nil
}
