// Package orderedmethod: order= on a method, the entity a parameter.
package orderedmethod

import (
	"context"
	"time"
)

type Ledger struct{ n int }

// Post posts an entry for an account, in time order per account; the
// whole call is the key.
//
//idem:order=account:at grace=90s on_duplicate=raise
func (l *Ledger) Post(ctx context.Context, account int64, at time.Time, amount int64) (int, error) {
	l.n++
	return l.n, nil
}
