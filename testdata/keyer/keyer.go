// Package keyer: types that write their own key material through
// idem.Keyer (value and pointer receivers, and an interface embedding it),
// including a struct the generator could not read (unexported fields).
package keyer

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/idemgen/idemgen/runtime/idem"
)

var runs atomic.Int64

// Email compares case-insensitively: its key is the lower-cased address.
type Email struct{ addr string }

func NewEmail(s string) Email { return Email{addr: s} }

func (e Email) IdemKey() any { return strings.ToLower(e.addr) }

// Cart keys on its item set, ignoring order, through a pointer receiver.
type Cart struct {
	Items []string
	note  string
}

func (c *Cart) IdemKey() any {
	items := make([]any, 0, len(c.Items))
	for _, it := range slices.Sorted(slices.Values(c.Items)) {
		items = append(items, it)
	}
	return items
}

// Identity is any value that can key itself.
type Identity interface {
	idem.Keyer
	Name() string
}

type User struct{ ID string }

func (u User) IdemKey() any { return u.ID }
func (u User) Name() string { return u.ID }

type Order struct {
	To   Email
	Cart Cart
}

// Notify emails a cart summary.
//
//idem:on_duplicate=return
func Notify(ctx context.Context, o Order, who Identity, cc *Email) (int64, error) {
	return runs.Add(1), nil
}
