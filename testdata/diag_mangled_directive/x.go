package p

import "context"

// F was gofmt'd with a bare directive.
//
// idem:
func F(ctx context.Context) error { return nil }

// G wrote a space.
//
// idem: ttl=1h
func G(ctx context.Context) error { return nil }
