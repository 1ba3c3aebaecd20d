package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

type ChargeRequest struct {
	CustomerID string
	OrderID    string
	Cents      int64
}

type Receipt struct {
	ID    string
	Cents int64
}

var charges int

// Charge is the function to protect: it must not run twice for one order.
func Charge(ctx context.Context, req ChargeRequest) (*Receipt, error) {
	charges++
	return &Receipt{ID: fmt.Sprintf("rcpt_%d", charges), Cents: req.Cents}, nil
}

// This is the wrapper idemgen generates for
//
//	//idem:key=req.CustomerID,req.OrderID on_duplicate=wait
//	func Charge(ctx context.Context, req ChargeRequest) (*Receipt, error)
var idemSpecCharge = &idem.Spec{Name: "example.com/billing.Charge", OnDuplicate: idem.DuplicateWait}

type Idempotent struct{ g *idem.Guard }

func (x *Idempotent) Charge(ctx context.Context, req ChargeRequest) (*Receipt, error) {
	c, k := idemimpl.Begin(x.g, idemSpecCharge)
	k.Key().String(req.CustomerID)
	k.Key().String(req.OrderID)
	p := k.Payload() // key= names a subset: fingerprint the whole request
	p.String(req.CustomerID)
	p.String(req.OrderID)
	p.Int(req.Cents)
	return idem.Do(ctx, c, func(ctx context.Context) (*Receipt, error) {
		return Charge(ctx, req)
	})
}

func Example() {
	billing := &Idempotent{g: idem.NewGuard(memstore.New())}
	ctx := context.Background()
	req := ChargeRequest{CustomerID: "cus_1", OrderID: "ord_1", Cents: 1250}

	first, _ := billing.Charge(ctx, req)
	again, _ := billing.Charge(ctx, req) // a retry: replayed, not charged
	fmt.Println(first.ID, again.ID, "charges:", charges)

	req.Cents = 9999 // same order, different amount: refused
	_, err := billing.Charge(ctx, req)
	fmt.Println(errors.Is(err, idem.ErrPayloadMismatch))
	// Output:
	// rcpt_1 rcpt_1 charges: 1
	// true
}

// A function guards its own writes with its fence: an owner that lost its
// lease to a successor holds a lower fence, and the write refuses it.
func ExampleFenceFrom() {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "example.com/ledger.Post"}
	lastFence := uint64(0) // in real code: a column next to the business row

	c := g.Begin(spec, "entry_42")
	_, err := idem.Do(context.Background(), c, func(ctx context.Context) (struct{}, error) {
		fence, _ := idem.FenceFrom(ctx)
		if fence <= lastFence {
			return struct{}{}, idem.ErrLeaseLost // a successor already wrote
		}
		lastFence = fence // UPDATE … SET fence = $1 WHERE fence < $1
		return struct{}{}, nil
	})
	fmt.Println(err, lastFence)
	// Output: <nil> 1
}

// Money implements idem.Keyer: it decides itself what identifies it.
type Money struct {
	Cents    int64
	Currency string
	display  string // not part of the key
}

func (m Money) IdemKey() any { return []any{m.Cents, m.Currency} }

func ExampleKeyer() {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "example.com/pay.Refund"}
	key := func(m Money) string {
		key, _ := g.Begin(spec, m).StoreKey()
		return key
	}
	a := key(Money{Cents: 500, Currency: "EUR", display: "€5.00"})
	b := key(Money{Cents: 500, Currency: "EUR", display: "5,00 €"})
	fmt.Println(a == b)
	// Output: true
}
