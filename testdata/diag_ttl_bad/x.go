package p

import "context"

// F has a ttl that is neither a duration nor seconds.
//
//idem:ttl=forever
func F(ctx context.Context, id string) error { return nil }

// G has a negative and H a zero ttl.
//
//idem:ttl=-5m
func G(ctx context.Context, id string) error { return nil }

//idem:ttl=0
func H(ctx context.Context, id string) error { return nil }
