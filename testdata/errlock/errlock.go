// Package errlock: an (error)-only result, and on_failure=lock replaying
// the recorded failure; a second function shows on_failure=unlock.
package errlock

import (
	"context"
	"errors"
	"sync/atomic"
)

var sends, charges atomic.Int64

// ErrDeclined is what Charge returns for an amount over the limit.
var ErrDeclined = errors.New("card declined")

// SendEmail sends a message; a failure is recorded and replayed.
//
//idem:on_failure=lock ttl=1h
func SendEmail(ctx context.Context, to, body string) error {
	sends.Add(1)
	if to == "" {
		return errors.New("no recipient")
	}
	return nil
}

// Charge fails for large amounts; a failure unlocks the key so a retry runs.
//
//idem:on_failure=unlock
func Charge(ctx context.Context, account string, cents int64) error {
	charges.Add(1)
	if cents > 1000 {
		return ErrDeclined
	}
	return nil
}
