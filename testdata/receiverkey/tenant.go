// Package receiverkey: a method's receiver is not part of its key unless
// key= names the receiver's fields (key=t.ID,amount); the wrapper's doc
// line says which.
package receiverkey

import (
	"context"
	"fmt"
	"sync/atomic"
)

var runs atomic.Int64

type Tenant struct {
	ID     string
	region string
}

// Bill is one call per tenant and amount.
//
//idem:key=t.ID,t.region,amount
func (t *Tenant) Bill(ctx context.Context, amount int64) (string, error) {
	return fmt.Sprint(t.ID, "/", t.region, ":", amount, "#", runs.Add(1)), nil
}

// Notify does not key its receiver: every tenant's call with one message
// is the same call (the doc line of the wrapper says so).
//
//idem:on_duplicate=return
func (t *Tenant) Notify(ctx context.Context, msg string) (string, error) {
	return fmt.Sprint(t.ID, ":", msg, "#", runs.Add(1)), nil
}
