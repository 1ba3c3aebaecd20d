// Package generics wraps generic functions and keys and stores instances
// of generic types: an SDK's Opt[T] with unexported state (through its
// text form), this package's own Opt[T] (by its fields), Page[T] results.
package generics

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/idemgen/idemgen/runtime/idem"
	amodel "github.com/idemgen/idemgen/testdata/generics/a/model"
	bmodel "github.com/idemgen/idemgen/testdata/generics/b/model"
	"github.com/idemgen/idemgen/testdata/generics/sdk"
)

var runs atomic.Int64

// Opt is this package's own optional value: its unexported fields are
// keyed like any field of the package's own types.
type Opt[T comparable] struct {
	value   T
	present bool
}

// Some is a present value.
func Some[T comparable](v T) Opt[T] { return Opt[T]{value: v, present: true} }

// Value returns the value and whether it is present.
func (o Opt[T]) Value() (T, bool) { return o.value, o.present }

// Page is a page of results.
type Page[T any] struct {
	Items []T
	Next  *string
}

// Invoice is one invoice.
type Invoice struct {
	ID    string
	Cents int64
}

// InvoiceRequest has SDK-style optional fields.
type InvoiceRequest struct {
	Customer string
	Amount   Opt[int64]
	Memo     Opt[string]
	Coupon   sdk.Opt[string]
}

// CreateInvoice creates an invoice.
//
//idem:ttl=1h
func CreateInvoice(ctx context.Context, req InvoiceRequest) (Page[Invoice], sdk.Opt[int64], error) {
	n := runs.Add(1)
	cents, _ := req.Amount.Value()
	next := fmt.Sprint("after-", n)
	return Page[Invoice]{Items: []Invoice{{ID: fmt.Sprint("inv-", n), Cents: cents}}, Next: &next}, sdk.Some(n), nil
}

// Event is what Publish accepts: events key themselves.
type Event interface {
	idem.Keyer
	Topic() string
}

// OrderPlaced and OrderCancelled key on their order ID alone.
type OrderPlaced struct{ OrderID string }

func (e OrderPlaced) IdemKey() any  { return e.OrderID }
func (e OrderPlaced) Topic() string { return "orders.placed" }

type OrderCancelled struct{ OrderID string }

func (e OrderCancelled) IdemKey() any  { return e.OrderID }
func (e OrderCancelled) Topic() string { return "orders.cancelled" }

// Publish publishes an event once: Publish[OrderPlaced] and
// Publish[OrderCancelled] of one order are two calls.
//
//idem:ttl=1h
func Publish[E Event](ctx context.Context, e E) (int64, error) {
	return runs.Add(1), nil
}

// Cents is an amount.
type Cents int64

// Tally counts an amount of any integer type once.
//
//idem:ttl=1h
func Tally[N ~int | ~int64](ctx context.Context, n N) (int64, error) {
	return runs.Add(1) + int64(n)*0, nil
}

// Send sends any message once per ID: the message is not keyed (its type
// is unconstrained), the type argument and the ID are.
//
//idem:key=id
func Send[M any](ctx context.Context, id string, m M) (int64, error) {
	return runs.Add(1), nil
}

// Save saves a page of string-like items once per page.
//
//idem:ttl=1h
func Save[S ~string](ctx context.Context, p Page[S], ps ...S) error {
	runs.Add(1)
	return nil
}

// Order is a plain struct.
type Order struct {
	ID  string
	Qty int
}

// Place takes exactly an Order through its type parameter: the value is
// keyed as an Order.
//
//idem:ttl=1h
func Place[O interface{ Order }](ctx context.Context, o O) (int64, error) {
	return runs.Add(1), nil
}

// SKU is keyed by its text form.
type SKU struct{ Vendor, Code string }

func (s SKU) MarshalText() ([]byte, error) { return []byte(s.Vendor + "/" + s.Code), nil }

// Texter is any type with a text form.
type Texter interface{ MarshalText() ([]byte, error) }

// Stock counts an item of any type with a text form once.
//
//idem:ttl=1h
func Stock[T Texter](ctx context.Context, item T, qty float64) (int64, error) {
	return runs.Add(1), nil
}

// Import takes pages of two packages' Invoice types, both of packages
// named model: their instances' helpers must not collide.
//
//idem:ttl=1h
func Import(ctx context.Context, a Page[amodel.Invoice], b Page[bmodel.Invoice]) (Page[bmodel.Invoice], error) {
	runs.Add(1)
	return b, nil
}
