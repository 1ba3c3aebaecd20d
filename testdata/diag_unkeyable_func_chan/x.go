package p

import "context"

type Req struct {
	ID       string
	Callback func(string)
	Done     chan struct{}
}

// F has a func field in its default key; G a channel parameter.
//
//idem:ttl=1h
func F(ctx context.Context, req Req) error { return nil }

//idem:ttl=1h
func G(ctx context.Context, ch chan int) error { return nil }
