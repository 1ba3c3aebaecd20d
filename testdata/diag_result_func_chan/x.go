package p

import "context"

type Res struct {
	ID   string
	Next func() int
}

// F returns a struct with a func field; G a channel.
//
//idem:ttl=1h
func F(ctx context.Context) (*Res, error) { return nil, nil }

//idem:ttl=1h
func G(ctx context.Context) (<-chan int, error) { return nil, nil }
