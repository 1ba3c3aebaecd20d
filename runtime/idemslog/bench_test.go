package idemslog_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/idemslog"
)

// BenchmarkReplayObserved: a memory-store replay logged through slog
// against the same replay unobserved. "below_level" is the production
// case (replays at Debug, handler at Info); "json" logs every replay.
func BenchmarkReplayObserved(b *testing.B) {
	b.Run("below_level", func(b *testing.B) {
		obstest.BenchReplay(b, idemslog.New(slog.New(slog.NewJSONHandler(io.Discard, nil))))
	})
	b.Run("json", func(b *testing.B) {
		h := slog.NewJSONHandler(io.Discard, nil)
		obstest.BenchReplay(b, idemslog.New(slog.New(h), idemslog.WithSuccessLevel(slog.LevelInfo)))
	})
}
