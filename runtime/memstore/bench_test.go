package memstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// BenchmarkStoreReplay is the store's own share of a replay: a claim of a
// completed key with a prebuilt request and a fixed clock, the shape of
// the peer's store-only BenchmarkReplay (docs/BENCHMARKS.md sets the two
// side by side). A wrapper's replay adds key derivation and decoding.
func BenchmarkStoreReplay(b *testing.B) {
	fixed := time.Unix(1_700_000_000, 0)
	for _, bc := range []struct {
		name string
		opts []memstore.Option
	}{
		{"store_clock", nil},
		{"fixed_clock", []memstore.Option{memstore.WithClock(func() time.Time { return fixed })}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := memstore.New(bc.opts...)
			ctx := context.Background()
			req := idemstore.ClaimRequest{Key: "idem:bench.Charge:v1:" + strings.Repeat("ab", 32), Owner: idemstore.Token{1},
				Lease: time.Minute, TTL: time.Hour}
			res, err := s.Claim(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			lease := idemstore.Lease{Key: req.Key, Owner: req.Owner, Fence: res.Fence, Duration: req.Lease, TTL: req.TTL}
			if err := s.Complete(ctx, lease, idemstore.Result{Data: []byte("receipt")}); err != nil {
				b.Fatal(err)
			}
			req.Owner = idemstore.Token{2}
			b.ReportAllocs()
			for b.Loop() {
				if res, err := s.Claim(ctx, req); err != nil || res.Status != idemstore.ClaimCompleted {
					b.Fatal(res.Status, err)
				}
			}
		})
	}
}
