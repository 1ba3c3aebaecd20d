// Package other has a New too.
package other

import "context"

// New creates something else.
func New(ctx context.Context, id int64) error { return nil }
