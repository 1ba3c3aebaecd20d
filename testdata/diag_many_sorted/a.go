package p

import "context"

// A comes first in file order: its errors are listed first.
//
//idem:on_duplicate=never key=nope
func A(ctx context.Context) error { return nil }
