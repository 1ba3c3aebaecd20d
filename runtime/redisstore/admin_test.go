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
			claim := func(key string, owner byte) idem.Lease {
				t.Helper()
				res, err := s.Claim(ctx, idem.ClaimRequest{Key: key, Owner: idem.Token{owner}, Lease: lease, TTL: ttl})
				if err != nil || !(res.Status == idem.ClaimAcquired || res.Status == idem.ClaimTakenOver) {
					t.Fatalf("claim %s = %v, %v", key, res.Status, err)
				}
				return idem.Lease{Key: key, Owner: idem.Token{owner}, Fence: res.Fence, Duration: lease, TTL: ttl}
			}
			for i := 0; i < 12; i++ {
				l := claim(fmt.Sprintf("list:%d", i), byte(i+1))
				if i%3 != 0 {
					if err := s.Complete(ctx, l, idem.Result{Data: []byte(`1`)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			claim("other", 99)
			// An ordered claim leaves an order record: not listed.
			if _, err := s.Claim(ctx, idem.ClaimRequest{Key: "list:{e}:x", Owner: idem.Token{100}, Lease: lease, TTL: ttl,
				Order: idem.OrderClaim{Key: "list:{e}", At: time.Now()}}); err != nil {
				t.Fatal(err)
			}
			states := map[idem.State]int{}
			if err := s.List(ctx, "list:", func(r idem.Record) error { states[r.State]++; return nil }); err != nil {
				t.Fatal(err)
			}
			want := map[idem.State]int{idem.StateCompleted: 8, idem.StateInProgress: 5}
			if diff := cmp.Diff(want, states); diff != "" {
				t.Fatalf("List (-want +got):\n%s", diff)
			}
			stop := errors.New("stop")
			n := 0
			if err := s.List(ctx, "", func(idem.Record) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
				t.Fatalf("List did not stop at fn's error: %v after %d", err, n)
			}

			// ForceRelease fences the owner out; the next owner's fence is higher.
			l := claim("force", 7)
			r, err := s.ForceRelease(ctx, "force")
			if err != nil || r.State != idem.StateReleased || r.Fence != l.Fence+1 || r.Owner != (idem.Token{}) {
				t.Fatalf("ForceRelease = %+v, %v", r, err)
			}
			if err := s.Complete(ctx, l, idem.Result{Data: []byte(`1`)}); !errors.Is(err, idem.ErrLeaseLost) {
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
			if err := s.List(ctx, "", func(idem.Record) error { n++; return nil }); err != nil || n != 0 {
				t.Fatalf("List after expiry found %d records, %v", n, err)
			}
			if removed, err := s.Cleanup(ctx); err != nil || removed != 0 {
				t.Fatalf("Cleanup = %d, %v", removed, err)
			}
		})
	}
}
