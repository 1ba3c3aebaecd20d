package memstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// A replay whose key the Guard's memo holds claims the key's record by the
// handle an earlier ClaimRecord gave. Once that record is dropped (Delete,
// or a sweep after it expired) the handle must not answer for the key: the
// next call runs again, and the replays after it replay that run.
func TestMemoryStoreRecordHandleAfterDrop(t *testing.T) {
	tests := []struct {
		name string
		drop func(ctx context.Context, s *memstore.Store, now *time.Time) error
	}{
		{"deleted", func(ctx context.Context, s *memstore.Store, _ *time.Time) error {
			var key string // the Guard's store key, the only one
			if err := s.List(ctx, "", func(r idemstore.Record) error { key = r.Key; return nil }); err != nil {
				return err
			}
			return s.Delete(ctx, key)
		}},
		{"expired and swept", func(ctx context.Context, s *memstore.Store, now *time.Time) error {
			*now = now.Add(2 * time.Hour)
			if n, err := s.Cleanup(ctx); err != nil || n != 1 {
				return fmt.Errorf("Cleanup = %d, %v; want 1 record swept", n, err)
			}
			return nil
		}},
		{"expired, not swept", func(_ context.Context, _ *memstore.Store, now *time.Time) error {
			*now = now.Add(2 * time.Hour)
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s := memstore.New(memstore.WithClock(func() time.Time { return now }))
			g := idem.NewGuard(s)
			spec := &idem.Spec{Name: "handle", TTL: time.Hour}
			ctx := context.Background()
			runs := 0
			fn := func(context.Context) (int, error) { runs++; return runs, nil }
			var got []int
			calls := func() {
				// The first call runs or replays, the second puts the key
				// in the memo, the third claims by the record's handle.
				for range 3 {
					v, err := call(ctx, g, spec, "k", fn)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, v)
				}
			}
			calls()
			if err := tt.drop(ctx, s, &now); err != nil {
				t.Fatal(err)
			}
			calls()
			if diff := cmp.Diff([]int{1, 1, 1, 2, 2, 2}, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
		})
	}
}

// claimCounter embeds the memory store, and with it ClaimRecord, but
// counts claims in its own Claim.
type claimCounter struct {
	*memstore.Store
	claims int
}

func (c *claimCounter) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	c.claims++
	return c.Store.Claim(ctx, req)
}

// A Guard over a wrapper of the memory store claims through the
// wrapper's Claim, not the ClaimRecord it inherits.
func TestMemoryStoreWrapperClaimsThroughItsClaim(t *testing.T) {
	s := &claimCounter{Store: memstore.New()}
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "wrapped"}
	for range 4 {
		if _, err := call(context.Background(), g, spec, "k", func(context.Context) (int, error) { return 1, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if s.claims != 4 {
		t.Errorf("the wrapper's Claim saw %d claims, want 4", s.claims)
	}
}
