package p

import (
	"context"
	"net/url"
)

// F keys on an unexported field of another package's type.
//
//idem:key=u.Host,u.User.username
func F(ctx context.Context, u url.URL) error { return nil }
