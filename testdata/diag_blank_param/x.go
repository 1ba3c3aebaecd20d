package p

import "context"

// G has a blank parameter that cannot be keyed: the diagnostic names it
// p1, and exclude=p1 is accepted.
//
//idem:ttl=1h
func G(ctx context.Context, _ chan int, n int) error { return nil }

// U has unnamed parameters.
//
//idem:ttl=1h
func U(context.Context, string, chan string) error { return nil }
