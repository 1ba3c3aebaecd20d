package idem_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// The amortized sweep runs inside claims; it must never drop the record
// the claim is creating (it once did, about once in 70,000 fresh claims).
func TestMemoryStoreSweepKeepsFreshClaims(t *testing.T) {
	s := idem.NewMemoryStore()
	ctx := context.Background()
	for i := range 70000 {
		key := fmt.Sprint("k", i)
		res, err := s.Claim(ctx, idem.ClaimRequest{Key: key, Owner: idem.Token{1, byte(i), byte(i >> 8), byte(i >> 16)}, Lease: time.Minute, TTL: time.Hour})
		if err != nil || !res.Status.Owns() {
			t.Fatalf("claim %d: %v, %v", i, res.Status, err)
		}
		if _, err := s.Get(ctx, key); err != nil {
			t.Fatalf("claim %d of %q acquired, then Get = %v", i, key, err)
		}
	}
}

// A claim refused for capacity must not have advanced its entity's order.
func TestMemoryStoreFullDoesNotAdvanceOrder(t *testing.T) {
	s := idem.NewMemoryStore(idem.WithMaxRecords(1))
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(key string, at time.Time) (idem.ClaimResult, error) {
		return s.Claim(ctx, idem.ClaimRequest{Key: key, Owner: idem.Token{byte(len(key))}, Lease: time.Minute, TTL: time.Hour,
			Order: idem.OrderClaim{Key: "entity", At: at}})
	}
	if _, err := claim("a", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := claim("bb", t0.Add(time.Hour)); err == nil {
		t.Fatal("second key claimed past capacity")
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if res, err := claim("ccc", t0.Add(time.Minute)); err != nil || res.Status != idem.ClaimAcquired {
		t.Fatalf("claim after the refused one = %v, %v; the refused claim must not have moved the entity to t0+1h", res.Status, err)
	}
}
