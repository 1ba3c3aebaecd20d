package p

import "context"

type Res struct {
	ID    string
	Inner Inner
}

type Inner struct {
	Public string
	secret string
}

// F returns a nested unexported field, which JSON drops.
//
//idem:ttl=1h
func F(ctx context.Context) (Res, error) { return Res{}, nil }
