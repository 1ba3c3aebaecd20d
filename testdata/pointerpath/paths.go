// Package pointerpath: key paths through pointers (nil-checked), promoted
// fields of embedded structs, and a key of several paths of other types.
package pointerpath

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type Base struct{ Tenant string }

type Account struct {
	Base
	ID    int64
	Owner *Person
}

type Person struct {
	Email string
	Tags  []string
}

type Request struct {
	Account *Account
	Amount  int
}

// Transfer is keyed by tenant, account and owner email.
//
//idem:key=req.Account.Tenant,req.Account.ID,req.Account.Owner.Email,req.Account.Owner.Tags
func Transfer(ctx context.Context, req *Request) (int64, error) {
	return runs.Add(1), nil
}
