// Package streamchan wraps a function returning <-chan T: the wrapper
// returns iter.Seq2[T, error].
package streamchan

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// runs counts real runs of Ticks.
var runs atomic.Int64

type Tick struct {
	N  int
	At time.Time
}

// Ticks sends n ticks and closes the channel; a negative n is an error.
//
//idem:ttl=1h
func Ticks(ctx context.Context, n int) (<-chan Tick, error) {
	runs.Add(1)
	if n < 0 {
		return nil, errors.New("negative count")
	}
	ch := make(chan Tick)
	go func() {
		defer close(ch)
		for i := 0; i < n; i++ {
			select {
			case ch <- Tick{N: i, At: time.Unix(int64(i), 0).UTC()}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
