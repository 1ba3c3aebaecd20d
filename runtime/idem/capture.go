package idem

import (
	"context"
	"sync"
)

type captureKey struct{}

// outcomeCapture holds the last final outcome of the calls made with a
// ctx from CaptureOutcome.
type outcomeCapture struct {
	mu   sync.Mutex
	last Outcome
}

// CaptureOutcome returns a ctx whose guarded calls record their final
// outcome, and a function that returns the last one recorded (zero if
// none), so a caller can tell an execution from a replay.
func CaptureOutcome(ctx context.Context) (context.Context, func() Outcome) {
	c := &outcomeCapture{}
	return context.WithValue(ctx, captureKey{}, c), func() Outcome {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.last
	}
}

func capture(ctx context.Context, o Outcome) {
	switch o {
	case OutcomeTakeover, OutcomeOverride, OutcomeHeartbeatFailed, OutcomeStoreError:
		return // not final
	}
	if c, ok := ctx.Value(captureKey{}).(*outcomeCapture); ok {
		c.mu.Lock()
		c.last = o
		c.mu.Unlock()
	}
}
