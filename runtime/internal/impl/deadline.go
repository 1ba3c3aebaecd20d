package impl

import (
	"context"
	"errors"
	"os"
	"time"
)

// DeadlineSlack is how close to a ctx's deadline a client's timeout
// counts as that deadline's: a client that bounds its I/O by the ctx's
// deadline (go-redis with ContextTimeoutEnabled, a dialer) can notice it
// a moment before the ctx's own timer fires, while ctx.Err() is still
// nil. A store that stalls until its own timeout, further from the
// caller's deadline than this, is still an unavailable store.
const DeadlineSlack = 2 * time.Millisecond

// CtxErr returns the error of ctx that err, a store client's error, is
// owed to, or nil: ctx.Err() once ctx is done, and
// context.DeadlineExceeded when err is a timeout and ctx's deadline has
// passed or is at most DeadlineSlack away. Stores class an error with it
// before calling it an outage, so a caller's deadline is never reported
// as an unavailable store (which a fail-open Guard would run through).
func CtxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if err == nil || !IsTimeout(err) {
		return nil
	}
	return DeadlineDue(ctx)
}

// DeadlineDue returns context.DeadlineExceeded when ctx's deadline has
// passed or is at most DeadlineSlack away, whether or not ctx is done yet.
func DeadlineDue(ctx context.Context) error {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= DeadlineSlack {
		return context.DeadlineExceeded
	}
	return nil
}

// IsTimeout reports whether err is a timeout: a deadline exceeded (a
// ctx's, a net.Conn's, an os.File's) or any error whose Timeout method
// says so (net.Error).
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
