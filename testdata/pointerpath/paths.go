// Package pointerpath: key paths through pointers (nil-checked), promoted
// fields of embedded structs and of embedded pointers to structs (a nil
// embedded pointer is a nil in the key, as any nil pointer on a path), and
// a key of several paths of other types.
package pointerpath

import (
	"context"
	"sync/atomic"
)

var runs, touches atomic.Int64

type Base struct{ Tenant string }

// Audit is embedded by pointer: its fields are promoted, and may be nil.
type Audit struct {
	By    string
	Trace string
}

type Account struct {
	Base
	*Audit
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

// Transfer is keyed by tenant (promoted from Base), account and owner email.
//
//idem:key=req.Account.Tenant,req.Account.ID,req.Account.Owner.Email,req.Account.Owner.Tags
func Transfer(ctx context.Context, req *Request) (int64, error) {
	return runs.Add(1), nil
}

// Meta is embedded in a result: omit= reaches its fields as promoted ones.
type Meta struct {
	Note  string
	Count int64
}

type Touched struct {
	Meta
	Tenant string
}

// Touch is keyed by tenant and actor (By, promoted through the embedded
// *Audit); the trace (promoted too) is left out of the payload, and the
// note (promoted from the result's Meta) out of the record.
//
//idem:key=acct.Tenant,acct.By exclude=acct.Trace omit=r1.Note
func Touch(ctx context.Context, acct Account) (Touched, error) {
	n := touches.Add(1)
	return Touched{Meta: Meta{Note: "fresh", Count: n}, Tenant: acct.Tenant}, nil
}
