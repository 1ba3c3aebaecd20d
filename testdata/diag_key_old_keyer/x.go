package p

import (
	"context"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// User has the IdemKey method of an idemgen before idem.Keyer became
// IdemKey() any: it is refused, not ignored.
type User struct{ ID string }

func (u User) IdemKey(b *idemimpl.KeyBuilder) { b.String(u.ID) }

// F keys on a User.
//
//idem:ttl=1h
func F(ctx context.Context, u User) error { return nil }
