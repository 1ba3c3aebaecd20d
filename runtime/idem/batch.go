package idem

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

type captureKey struct{}

// OutcomeCapture records the outcomes of the guarded calls made with a ctx
// from CaptureOutcome, so a caller can tell an execution from a replay.
type OutcomeCapture struct {
	mu   sync.Mutex
	last Outcome
}

// CaptureOutcome returns a ctx whose guarded calls record their final
// outcome in the returned capture.
func CaptureOutcome(ctx context.Context) (context.Context, *OutcomeCapture) {
	c := &OutcomeCapture{}
	return context.WithValue(ctx, captureKey{}, c), c
}

// Last returns the last outcome recorded (zero if none).
func (c *OutcomeCapture) Last() Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func capture(ctx context.Context, o Outcome) {
	switch o {
	case OutcomeTakeover, OutcomeOverride, OutcomeHeartbeatFailed, OutcomeStoreError:
		return // not final
	}
	if c, ok := ctx.Value(captureKey{}).(*OutcomeCapture); ok {
		c.mu.Lock()
		c.last = o
		c.mu.Unlock()
	}
}

// BatchStatus is what happened to one item of ApplyBatch.
type BatchStatus uint8

const (
	// BatchApplied: the item's function ran.
	BatchApplied BatchStatus = iota + 1
	// BatchReplayed: the item had been applied before; its result was replayed.
	BatchReplayed
	// BatchDuplicate: a duplicate the function refused (ErrDuplicate,
	// ErrInProgress, ErrPayloadMismatch).
	BatchDuplicate
	// BatchOutOfOrder: the item was older than its entity's last accepted event.
	BatchOutOfOrder
	// BatchFailed: the function (or the store) returned another error.
	BatchFailed
	// BatchSkipped: not attempted, because an earlier item of the same
	// entity was out of order (unless ContinueAfterOutOfOrder).
	BatchSkipped
)

var batchNames = [...]string{"", "applied", "replayed", "duplicate", "out_of_order", "failed", "skipped"}

func (s BatchStatus) String() string {
	if int(s) < len(batchNames) && s != 0 {
		return batchNames[s]
	}
	return "batch(" + itoa(int64(s)) + ")"
}

// BatchResult is the outcome of one item, at the item's index in the input.
type BatchResult struct {
	Status BatchStatus
	Err    error
}

// BatchOption tunes ApplyBatch. (It replaces the BatchOptions struct, so
// that every option in this package has the same shape, a function.)
type BatchOption func(*batchConfig)

type batchConfig struct {
	continueAfterOutOfOrder bool
}

// WithContinueAfterOutOfOrder keeps ApplyBatch applying an entity's later
// items after one of its items was out of order (by default they are
// skipped).
func WithContinueAfterOutOfOrder() BatchOption {
	return func(c *batchConfig) { c.continueAfterOutOfOrder = true }
}

// ApplyBatch applies a batch of events: grouped by entity, each group in
// time order (stable for equal times), one at a time per entity; different
// entities run concurrently. apply is normally a generated wrapper of an
// ordered function. Duplicates do not stop an entity; an ordering violation
// skips the entity's remaining items unless WithContinueAfterOutOfOrder. The result
// has one entry per item, in input order.
func ApplyBatch[T any](ctx context.Context, items []T, entity func(T) string, at func(T) time.Time,
	apply func(context.Context, T) error, opts ...BatchOption) []BatchResult {
	var cfg batchConfig
	for _, o := range opts {
		o(&cfg)
	}
	results := make([]BatchResult, len(items))
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
					results[i] = BatchResult{Status: BatchSkipped, Err: ctx.Err()}
					continue
				}
				cctx, c := CaptureOutcome(ctx)
				err := apply(cctx, items[i])
				results[i] = BatchResult{Status: batchStatus(err, c.Last()), Err: err}
				if results[i].Status == BatchOutOfOrder && !cfg.continueAfterOutOfOrder {
					stopped = true
				}
			}
		}()
	}
	wg.Wait()
	return results
}

func batchStatus(err error, o Outcome) BatchStatus {
	switch {
	case err == nil && o == OutcomeReplayed:
		return BatchReplayed
	case err == nil:
		return BatchApplied
	case errors.Is(err, ErrOutOfOrder):
		return BatchOutOfOrder
	case errors.Is(err, ErrDuplicate), errors.Is(err, ErrInProgress), errors.Is(err, ErrPayloadMismatch):
		return BatchDuplicate
	case o == OutcomeReplayed: // a replayed recorded failure
		return BatchDuplicate
	default:
		return BatchFailed
	}
}
