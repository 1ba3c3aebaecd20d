package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/redis/go-redis/v9"
)

func TestConformanceStandalone(t *testing.T) {
	t.Parallel() // the suite mostly sleeps through leases
	rdb := standalone(t)
	idemtest.RunStoreSuite(t, idemtest.Harness{
		// The suite's 200 concurrent claims must all land within one
		// lease; on a loaded 2-core machine (CI runs every package at
		// once) 300ms is not always enough, and a later claim rightly
		// takes over.
		Lease: time.Second,
		New: func(t *testing.T, _ func() time.Time) idemstore.Store {
			// A short poll keeps the suite's real-time waits tight.
			return newStore(t, rdb, WithPollInterval(50*time.Millisecond))
		},
		Corrupt: corruptWith(rdb),
		Legacy:  legacyWith(rdb),
		Raw:     rawWith(rdb),
	})
}

// corruptWith plants bytes that are no record at key's Redis key.
func corruptWith(rdb redis.UniversalClient) func(t *testing.T, s idemstore.Store, key string) {
	return func(t *testing.T, s idemstore.Store, key string) {
		if err := rdb.Set(context.Background(), s.(*Store).RecordKey(key), "\x00not a record", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// legacyWith rewrites key's record in encoding version 1, as stores wrote
// it before records carried ClaimedAt, keeping its Redis expiry.
func legacyWith(rdb redis.UniversalClient) func(t *testing.T, s idemstore.Store, key string) {
	return func(t *testing.T, s idemstore.Store, key string) {
		ctx := context.Background()
		rk := s.(*Store).RecordKey(key)
		v, err := rdb.Get(ctx, rk).Result()
		if err != nil {
			t.Fatal(err)
		}
		at, err := rdb.PExpireTime(ctx, rk).Result()
		if err != nil {
			t.Fatal(err)
		}
		r, err := decodeRecord(key, v, at.Milliseconds())
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.SetArgs(ctx, rk, encodeRecordV1(r, be64(v, offOp)), redis.SetArgs{KeepTTL: true}).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	rdb := cluster(t)
	idemtest.RunStoreSuite(t, idemtest.Harness{
		Lease: time.Second, // as above
		New: func(t *testing.T, _ func() time.Time) idemstore.Store {
			return newStore(t, rdb, WithPollInterval(50*time.Millisecond))
		},
		Corrupt: corruptWith(rdb),
		Legacy:  legacyWith(rdb),
		Raw:     rawWith(rdb),
	})
}

// TestOrderingCluster: ordered claims with keys shaped as the Guard builds
// them, so the call and its entity's order record share a slot.
func TestOrderingCluster(t *testing.T) {
	for name, rdb := range map[string]redis.UniversalClient{"standalone": standalone(t), "cluster": cluster(t)} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, rdb)
			ctx := context.Background()
			base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			entity := "app.Handle:v0:{e1f0}"
			tests := []struct {
				id    string
				at    time.Time
				grace time.Duration
				want  idemstore.ClaimStatus
			}{
				{"a", base, 0, idemstore.ClaimAcquired},
				{"b", base.Add(time.Minute), 0, idemstore.ClaimAcquired},
				{"c", base.Add(30 * time.Second), 0, idemstore.ClaimOutOfOrder},
				{"d", base.Add(30 * time.Second), time.Minute, idemstore.ClaimAcquired},
				{"b", base.Add(time.Minute), 0, idemstore.ClaimInProgress}, // a duplicate is not an ordering error
			}
			for i, tt := range tests {
				req := idemstore.ClaimRequest{Key: entity + ":" + tt.id, Owner: idemstore.Token{byte(i + 1)}, Lease: time.Minute, TTL: time.Hour,
					Order: idemstore.OrderClaim{Key: entity, At: tt.at, Grace: tt.grace}}
				res, err := s.Claim(ctx, req)
				if err != nil {
					t.Fatalf("claim %s: %v", tt.id, err)
				}
				if res.Status != tt.want {
					t.Fatalf("claim %s at %v = %v, want %v", tt.id, tt.at, res.Status, tt.want)
				}
				if res.Status == idemstore.ClaimOutOfOrder && !res.LastAccepted.Equal(base.Add(time.Minute)) {
					t.Fatalf("last accepted = %v, want %v", res.LastAccepted, base.Add(time.Minute))
				}
			}
			if _, err := s.Get(ctx, entity+":c"); !errors.Is(err, idem.ErrNotFound) {
				t.Fatalf("rejected event left a record: %v", err)
			}
		})
	}
}
