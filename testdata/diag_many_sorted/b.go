package p

import "context"

// B2 has two problems on one line.
//
//idem:ttl=x lease=y
func B2(ctx context.Context) error { return nil }

//idem:bogus=1
func B1(ctx context.Context) error { return nil }
