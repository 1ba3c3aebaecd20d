package idemaudit

import (
	"context"
	"encoding/base64"
	"log/slog"
)

// SlogSink writes entries to a slog.Logger, one record per entry, with the
// message "idem audit" and the attributes func, entity, key_hash, action,
// reason, fence (and payload, base64, when opted in). slog handlers
// write synchronously: give it a handler that does not block for long
// (a file or stdout, not a network socket).
type SlogSink struct {
	log   *slog.Logger
	level slog.Level
}

// NewSlogSink returns a sink logging at Info (use WithLevel for another).
func NewSlogSink(l *slog.Logger) *SlogSink { return &SlogSink{log: l, level: slog.LevelInfo} }

// WithLevel returns a copy of s logging at level.
func (s *SlogSink) WithLevel(level slog.Level) *SlogSink {
	c := *s
	c.level = level
	return &c
}

// Record logs e.
func (s *SlogSink) Record(ctx context.Context, e Entry) {
	if !s.log.Enabled(ctx, s.level) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.Time("at", e.Time),
		slog.String("func", e.Func),
		slog.String("action", string(e.Action)),
		slog.String("key_hash", e.KeyHash),
		slog.Uint64("fence", e.Fence))
	if e.Entity != "" {
		attrs = append(attrs, slog.String("entity", e.Entity))
	}
	if e.Reason != "" {
		attrs = append(attrs, slog.String("reason", e.Reason))
	}
	if e.Payload != nil {
		attrs = append(attrs, slog.String("payload", base64.StdEncoding.EncodeToString(e.Payload)))
	}
	s.log.LogAttrs(ctx, s.level, "idem audit", attrs...)
}
