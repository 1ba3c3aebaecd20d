package idemaudit_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemaudit"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
)

// BenchmarkReplayAudited: a memory-store replay audited through the slog
// sink (JSON to io.Discard) against the same replay unobserved.
func BenchmarkReplayAudited(b *testing.B) {
	obstest.BenchReplay(b, idemaudit.New(idemaudit.NewSlogSink(slog.New(slog.NewJSONHandler(io.Discard, nil)))))
}
