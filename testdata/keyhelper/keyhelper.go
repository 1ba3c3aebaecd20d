// Package keyhelper: every wrapper has a Key helper that computes the
// store key of a call without running it (for operators and tools): a
// free function, a method (variadic, a version), and an ordered function.
package keyhelper

import (
	"context"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

type Request struct {
	Tenant string
	Amount int64
}

// Charge is keyed by tenant; the amount is fingerprinted.
//
//idem:key=req.Tenant
func Charge(ctx context.Context, req Request) (int64, error) {
	return runs.Add(1), nil
}

type Ledger struct{}

// Post is a method with a variadic parameter and a version.
//
//idem:version=2
func (l *Ledger) Post(ctx context.Context, account string, entries ...int64) error {
	runs.Add(1)
	return nil
}

type Event struct {
	ID   string
	User string
	At   time.Time
}

// Apply is ordered per user.
//
//idem:key=ev.ID order=ev.User:ev.At
func Apply(ctx context.Context, ev Event) error {
	runs.Add(1)
	return nil
}
