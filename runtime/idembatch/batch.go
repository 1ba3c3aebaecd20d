// Package idembatch applies a batch of ordered events through their
// guarded functions: grouped by entity, each entity's events in time
// order, entities concurrently.
package idembatch

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Status is what happened to one item of Apply.
type Status uint8

const (
	// Applied: the item's function ran.
	Applied Status = iota + 1
	// Replayed: the item had been applied before; its result was replayed.
	Replayed
	// Duplicate: a duplicate the function refused (idem.ErrDuplicate,
	// idem.ErrInProgress, idem.ErrPayloadMismatch).
	Duplicate
	// OutOfOrder: the item was older than its entity's last accepted event.
	OutOfOrder
	// Failed: the function (or the store) returned another error.
	Failed
	// Skipped: not attempted, because an earlier item of the same
	// entity was out of order (unless WithContinueAfterOutOfOrder).
	Skipped
)

var statusNames = [...]string{"", "applied", "replayed", "duplicate", "out_of_order", "failed", "skipped"}

// String is the status's name, for logs.
func (s Status) String() string {
	if int(s) < len(statusNames) && s != 0 {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Result is the outcome of one item, at the item's index in the input.
type Result struct {
	Status Status
	Err    error
}

// Option tunes Apply.
type Option func(*config)

type config struct {
	continueAfterOutOfOrder bool
}

// WithContinueAfterOutOfOrder keeps Apply applying an entity's later
// items after one of its items was out of order (by default they are
// skipped).
func WithContinueAfterOutOfOrder() Option {
	return func(c *config) { c.continueAfterOutOfOrder = true }
}

// Apply applies a batch of events: grouped by entity, each group in
// time order (stable for equal times), one at a time per entity; different
// entities run concurrently. apply is normally a generated wrapper of an
// ordered function. Duplicates do not stop an entity; an ordering violation
// skips the entity's remaining items unless WithContinueAfterOutOfOrder. The result
// has one entry per item, in input order.
func Apply[T any](ctx context.Context, items []T, entity func(T) string, at func(T) time.Time,
	apply func(context.Context, T) error, opts ...Option) []Result {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	results := make([]Result, len(items))
	groups := map[string][]int{}
	var order []string
	for i, it := range items {
		e := entity(it)
		if _, ok := groups[e]; !ok {
			order = append(order, e)
		}
		groups[e] = append(groups[e], i)
	}
	var wg sync.WaitGroup
	for _, e := range order {
		idx := groups[e]
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(at(items[a]).UnixNano(), at(items[b]).UnixNano()) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopped := false
			for _, i := range idx {
				if stopped || ctx.Err() != nil {
					results[i] = Result{Status: Skipped, Err: ctx.Err()}
					continue
				}
				cctx, last := idem.CaptureOutcome(ctx)
				err := apply(cctx, items[i])
				results[i] = Result{Status: status(err, last()), Err: err}
				if results[i].Status == OutOfOrder && !cfg.continueAfterOutOfOrder {
					stopped = true
				}
			}
		}()
	}
	wg.Wait()
	return results
}

func status(err error, o idem.Outcome) Status {
	switch {
	case err == nil && o == idem.OutcomeReplayed:
		return Replayed
	case err == nil:
		return Applied
	case errors.Is(err, idem.ErrOutOfOrder):
		return OutOfOrder
	case errors.Is(err, idem.ErrDuplicate), errors.Is(err, idem.ErrInProgress), errors.Is(err, idem.ErrPayloadMismatch):
		return Duplicate
	case o == idem.OutcomeReplayed: // a replayed recorded failure
		return Duplicate
	default:
		return Failed
	}
}
