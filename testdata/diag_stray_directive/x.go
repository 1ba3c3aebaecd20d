package p

import "context"

// T is a type, not a function.
//
//idem:ttl=1h
type T struct{}

//idem:ttl=1h

// F has a blank line between its directive and itself.
func F(ctx context.Context) error { return nil }

func G() {
	//idem:ttl=1h
}
