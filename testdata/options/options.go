// Package options: every option together, ttl as seconds, several
// //idem: lines merged, wait bounded by wait=, raise mode.
package options

import (
	"context"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

// Gate blocks Slow until closed.
var Gate = make(chan struct{})

// Slow takes its time; duplicates wait at most 20ms for it.
//
//idem:ttl=3600 lease=2s
//idem:on_duplicate=wait wait=20ms on_failure=lock
//idem:key=id exclude=note name=options.slow version=3
func Slow(ctx context.Context, id string, note string) (int64, error) {
	n := runs.Add(1)
	<-Gate
	return n, nil
}

// Raise reports duplicates as errors.
//
//idem:on_duplicate=raise ttl=1500ms lease=250ms
func Raise(ctx context.Context, id int) (time.Duration, error) {
	runs.Add(1)
	return time.Duration(id), nil
}
