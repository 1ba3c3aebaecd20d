// Package promoted: a struct that embeds a type with a key or marshaling
// method (time.Time, a decimal, an idem.Keyer) is keyed and stored by its
// fields, the embedded one through its own method: a promoted method
// never stands for the whole struct. A nil pointer on a key= path is a
// value of its own, and a cyclic value is ErrInvalidKey.
package promoted

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

// Decimal marshals itself as text (as shopspring/decimal does).
type Decimal struct{ units int64 }

func NewDecimal(units int64) Decimal { return Decimal{units} }

func (d Decimal) MarshalText() ([]byte, error) {
	return []byte(strconv.FormatInt(d.units, 10)), nil
}

func (d *Decimal) UnmarshalText(p []byte) error {
	n, err := strconv.ParseInt(string(p), 10, 64)
	d.units = n
	return err
}

// Tenant writes its own key material.
type Tenant struct{ ID string }

func (t Tenant) IdemKey() any { return t.ID }

// Stamped embeds time.Time: its promoted MarshalBinary, MarshalText and
// MarshalJSON would write the time alone.
type Stamped struct {
	time.Time
	Order string
}

// Money embeds a decimal with MarshalText.
type Money struct {
	Decimal
	Currency string
}

// Request embeds a Keyer.
type Request struct {
	Tenant
	Item string
}

// Charge takes all three.
//
//idem:on_duplicate=return
func Charge(ctx context.Context, s Stamped, m Money, r Request) (Receipt, error) {
	n := runs.Add(1)
	return Receipt{Stamped: s, Total: m, N: n}, nil
}

// Receipt is a result that embeds time.Time through Stamped, and a
// decimal through Money: a replay keeps Order and Currency.
type Receipt struct {
	Stamped
	Total Money
	N     int64
}

type Customer struct{ ID int64 }

type Order struct {
	ID       string
	Customer *Customer
}

// Place is keyed by a path through a pointer: a guest order (no
// customer) is not customer 55's order.
//
//idem:key=o.ID,o.Customer.ID
func Place(ctx context.Context, o Order) (int64, error) {
	return runs.Add(1), nil
}

// Node can be cyclic.
type Node struct {
	Name string
	Next *Node
}

// Visit's key material can be cyclic: ErrInvalidKey, not a crash.
//
//idem:on_duplicate=return
func Visit(ctx context.Context, n *Node) (string, error) {
	var names []string
	for i := 0; n != nil && i < 3; i, n = i+1, n.Next {
		names = append(names, n.Name)
	}
	return fmt.Sprint(runs.Add(1), strings.Join(names, ",")), nil
}

// Tally's map values write nothing into the key (the generated loop
// declares no unused variable).
//
//idem:on_duplicate=return
func Tally(ctx context.Context, m map[string]struct {
	Note string `idem:"-"`
}) (int64, error) {
	return int64(len(m)), nil
}

// Marks' elements write nothing into the key either.
//
//idem:on_duplicate=return
func Marks(ctx context.Context, m []struct {
	Note string `idem:"-"`
}, a [2]struct {
	Note string `idem:"-"`
}, n [][1]struct {
	Note string `idem:"-"`
}) (int64, error) {
	return int64(len(m)), nil
}

// Route is keyed by an address (nil differs from empty, though both
// marshal to "") and an exact amount (big.Float's MarshalText rounds to
// the shortest decimal at its precision).
//
//idem:on_duplicate=return
func Route(ctx context.Context, ip net.IP, amount *big.Float) (int64, error) {
	return runs.Add(1), nil
}
