package pgaudit_test

import (
	"context"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemaudit"
	"github.com/idemgen/idemgen/runtime/idemobs/obstest"
	"github.com/idemgen/idemgen/runtime/pgaudit"
)

// BenchmarkReplayAudited: a memory-store replay audited into Postgres
// against the same replay unobserved (x-unobserved, obstest.BenchReplay).
// The caller's cost is the observer plus an enqueue; the COPY runs on the
// writer's goroutine. The benchmark audits far more replays per second
// than one COPY stream stores, so most entries are dropped (reported as
// dropped-fraction): it measures the caller's side, including the drop
// path, not the table's throughput.
func BenchmarkReplayAudited(b *testing.B) {
	pool, schema := migratedDB(b)
	w := pgaudit.New(pool, pgaudit.WithSchema(schema))
	obstest.BenchReplay(b, idemaudit.New(w))
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	total := float64(w.Dropped() + w.Written() + w.Lost())
	b.ReportMetric(float64(w.Dropped())/total, "dropped-fraction")
	b.ReportMetric(float64(w.Written()), "rows-written")
}
