// Package idemslog logs idem outcomes to a log/slog Logger.
//
//	g := idem.NewGuard(store, idem.WithObserver(idemslog.New(logger)))
//
// Each outcome is one record with the message "idem <outcome>" and the
// attributes
//
//	func      the function's stable name (idem.Spec.Name)
//	outcome   executed, replayed, in_progress, … (idem.Outcome.String)
//	fence     the record's fence, when there is one
//	duration  time from the start of the call to the outcome
//	err       the error the outcome carries, if any
//	reason    why an event was rejected as out of order, or overridden
//	key       the hashed store key, only with WithKey
//	entity    an ordered call's hashed order key, only with WithKey
//
// Payloads are never logged: an Event does not carry them, and the key is
// a SHA-256 (or HMAC) of the key material. Error messages are the
// function's and the store's own, so they are logged as they are.
//
// Levels by default: executed and replayed at Debug (every call produces
// one; raise them with WithSuccessLevel); failed, in_progress, duplicate,
// mismatch, takeover, invalid_key, out_of_order and override at Info
// (expected in a system with retries, worth seeing); heartbeat_failed and fail_open at Warn (the call
// went on, but with less protection); lease_lost and store_error at Error
// (a result was not stored, or the store could not be used). WithLevel
// overrides any of them.
//
// The logger is asked Enabled before anything is built, so outcomes below
// its level cost one call.
package idemslog

import (
	"context"
	"log/slog"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Attribute keys.
const (
	FuncKey     = "func"
	OutcomeKey  = "outcome"
	FenceKey    = "fence"
	DurationKey = "duration"
	ErrKey      = "err"
	ReasonKey   = "reason"
	KeyKey      = "key"
	EntityKey   = "entity"
)

// maxOutcome bounds the per-outcome tables; outcomes added to idem later
// than this package fall back to Info and a computed message.
const maxOutcome = 32

// Observer is an idem.Observer that logs. Make it with New; it is safe for
// concurrent use.
type Observer struct {
	logger *slog.Logger
	config
	msgs [maxOutcome]string
}

// Option configures New.
type Option func(*config)

// config is what the options set.
type config struct {
	withKey bool
	levels  [maxOutcome]slog.Level
}

// WithSuccessLevel sets the level of executed and replayed outcomes
// (default slog.LevelDebug).
func WithSuccessLevel(l slog.Level) Option {
	return func(c *config) {
		c.levels[idem.OutcomeExecuted] = l
		c.levels[idem.OutcomeReplayed] = l
	}
}

// WithLevel sets the level of one outcome.
func WithLevel(outcome idem.Outcome, l slog.Level) Option {
	return func(c *config) {
		if int(outcome) < maxOutcome {
			c.levels[outcome] = l
		}
	}
}

// WithKey adds the hashed store key as the "key" attribute, and an ordered
// call's hashed order key as "entity". It lets an operator find the record
// of a logged call; leave it off where even hashed keys should not reach
// the logs.
func WithKey() Option { return func(c *config) { c.withKey = true } }

// New returns an Observer logging to logger (slog.Default() if nil).
func New(logger *slog.Logger, opts ...Option) *Observer {
	if logger == nil {
		logger = slog.Default()
	}
	o := &Observer{logger: logger}
	for i := range o.levels {
		o.levels[i] = slog.LevelInfo
		o.msgs[i] = "idem " + idem.Outcome(i).String()
	}
	o.levels[idem.OutcomeExecuted] = slog.LevelDebug
	o.levels[idem.OutcomeReplayed] = slog.LevelDebug
	o.levels[idem.OutcomeHeartbeatFailed] = slog.LevelWarn
	o.levels[idem.OutcomeFailOpen] = slog.LevelWarn
	o.levels[idem.OutcomeLeaseLost] = slog.LevelError
	o.levels[idem.OutcomeStoreError] = slog.LevelError
	for _, opt := range opts {
		opt(&o.config)
	}
	return o
}

// Level returns the level outcome is logged at.
func (o *Observer) Level(outcome idem.Outcome) slog.Level {
	if int(outcome) < maxOutcome {
		return o.levels[outcome]
	}
	return slog.LevelInfo
}

// Observe logs e.
func (o *Observer) Observe(e idem.Event) { o.ObserveContext(context.Background(), e) }

// ObserveContext logs e with ctx, so handlers that read the ctx (a trace
// ID) see the caller's. A Guard calls only Observe today; see
// docs/OPERATIONS.md, "Tracing".
func (o *Observer) ObserveContext(ctx context.Context, e idem.Event) {
	level := o.Level(e.Outcome)
	if !o.logger.Enabled(ctx, level) {
		return
	}
	var msg string
	if int(e.Outcome) < maxOutcome {
		msg = o.msgs[e.Outcome]
	} else {
		msg = "idem " + e.Outcome.String()
	}
	// Eight attributes at most: a fixed array keeps them off the heap until
	// the handler copies them.
	var buf [8]slog.Attr
	attrs := append(buf[:0],
		slog.String(FuncKey, e.Func),
		slog.String(OutcomeKey, e.Outcome.String()),
	)
	if e.Fence != 0 {
		attrs = append(attrs, slog.Uint64(FenceKey, e.Fence))
	}
	attrs = append(attrs, slog.Duration(DurationKey, e.Duration))
	if e.Err != nil {
		attrs = append(attrs, slog.Any(ErrKey, e.Err))
	}
	// An out-of-order rejection's reason is its error's text: log it once.
	if e.Reason != "" && (e.Err == nil || e.Reason != e.Err.Error()) {
		attrs = append(attrs, slog.String(ReasonKey, e.Reason))
	}
	if o.withKey && e.Key != "" {
		attrs = append(attrs, slog.String(KeyKey, e.Key))
	}
	if o.withKey && e.Entity != "" {
		attrs = append(attrs, slog.String(EntityKey, e.Entity))
	}
	o.logger.LogAttrs(ctx, level, msg, attrs...)
}
