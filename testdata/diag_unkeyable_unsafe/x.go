package p

import (
	"context"
	"unsafe"
)

// F keys on an unsafe.Pointer.
//
//idem:ttl=1h
func F(ctx context.Context, p unsafe.Pointer) error { return nil }
