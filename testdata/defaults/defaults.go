// Package defaults: only default values (gofmt needs an option after
// //idem:, so ttl=24h, the default, is spelled out); the key is every
// parameter but the context, and a running duplicate gets ErrInProgress.
package defaults

import (
	"context"
	"sync/atomic"
)

type Quote struct {
	Symbol string
	Qty    int
	Total  float64
	Tags   []string
}

var (
	runs    atomic.Int64
	release = make(chan struct{}) // closed by tests to let a call finish
	block   atomic.Bool
)

// GetQuote prices qty units of symbol.
//
//idem:ttl=24h
func GetQuote(ctx context.Context, symbol string, qty int) (Quote, error) {
	runs.Add(1)
	if block.Load() {
		<-release
	}
	return Quote{Symbol: symbol, Qty: qty, Total: float64(qty) * 1.5, Tags: []string{}}, nil
}
