package redisstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

func TestAdmin(t *testing.T) {
	for name, rdb := range map[string]func(t *testing.T) redis.UniversalClient{
		"standalone": func(t *testing.T) redis.UniversalClient { return standalone(t) },
		"cluster":    func(t *testing.T) redis.UniversalClient { return cluster(t) },
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, rdb(t))
			ctx := context.Background()
			const lease, ttl = time.Second, 600 * time.Millisecond
			claim := func(key string, owner byte) idemstore.Lease {
				t.Helper()
				res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{owner}, Lease: lease, TTL: ttl})
				if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
					t.Fatalf("claim %s = %v, %v", key, res.Status, err)
				}
				return idemstore.Lease{Key: key, Owner: idemstore.Token{owner}, Fence: res.Fence, Duration: lease, TTL: ttl}
			}
			for i := 0; i < 12; i++ {
				l := claim(fmt.Sprintf("list:%d", i), byte(i+1))
				if i%3 != 0 {
					if err := s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			claim("other", 99)
			// An ordered claim leaves an order record: not listed.
			if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "list:{e}:x", Owner: idemstore.Token{100}, Lease: lease, TTL: ttl,
				Order: idemstore.OrderClaim{Key: "list:{e}", At: time.Now()}}); err != nil {
				t.Fatal(err)
			}
			states := map[idemstore.State]int{}
			if err := s.List(ctx, "list:", func(r idemstore.Record) error { states[r.State]++; return nil }); err != nil {
				t.Fatal(err)
			}
			want := map[idemstore.State]int{idemstore.StateCompleted: 8, idemstore.StateInProgress: 5}
			if diff := cmp.Diff(want, states); diff != "" {
				t.Fatalf("List (-want +got):\n%s", diff)
			}
			stop := errors.New("stop")
			n := 0
			if err := s.List(ctx, "", func(idemstore.Record) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
				t.Fatalf("List did not stop at fn's error: %v after %d", err, n)
			}

			// ForceRelease fences the owner out; the next owner's fence is higher.
			l := claim("force", 7)
			r, err := s.ForceRelease(ctx, "force")
			if err != nil || r.State != idemstore.StateReleased || r.Fence != l.Fence+1 || r.Owner != (idemstore.Token{}) {
				t.Fatalf("ForceRelease = %+v, %v", r, err)
			}
			if err := s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}); !errors.Is(err, idem.ErrLeaseLost) {
				t.Fatalf("released owner's Complete = %v, want ErrLeaseLost", err)
			}
			if l2 := claim("force", 8); l2.Fence != r.Fence+1 {
				t.Fatalf("fence after force release = %d, want %d", l2.Fence, r.Fence+1)
			}
			if _, err := s.ForceRelease(ctx, "absent"); !errors.Is(err, idem.ErrNotFound) {
				t.Fatalf("ForceRelease(absent) = %v, want ErrNotFound", err)
			}

			// Past every record's life Redis has removed them itself:
			// nothing is listed and Cleanup has nothing to do.
			time.Sleep(lease + ttl + 100*time.Millisecond)
			n = 0
			if err := s.List(ctx, "", func(idemstore.Record) error { n++; return nil }); err != nil || n != 0 {
				t.Fatalf("List after expiry found %d records, %v", n, err)
			}
			if removed, err := s.Cleanup(ctx); err != nil || removed != 0 {
				t.Fatalf("Cleanup = %d, %v", removed, err)
			}
		})
	}
}
