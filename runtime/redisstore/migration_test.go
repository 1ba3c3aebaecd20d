package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestOrderedClaimDuringSlotMigration: an ordered claim reads and writes
// two keys (the call's record and its entity's order record, one slot by
// their hash tag). While that slot migrates, Redis refuses a command on
// two keys with TRYAGAIN unless the node holds both: the source once one
// of them has moved (or does not exist), the target (after ASKING) until
// both are there, so a first claim of a new call gets TRYAGAIN for as long
// as the migration lasts. go-redis retries TRYAGAIN only MaxRedirects
// times (3 by default, tens of milliseconds; a pipelined command not at
// all), so the claim failed with idem.ErrStoreUnavailable although
// nothing was wrong. The store must retry it (TRYAGAIN means the script
// did not run) until the slot is settled, within its ctx.
// slotMigration is the migration of a key's slot from its master to
// another one.
type slotMigration struct {
	t        *testing.T
	nodes    map[string]*master
	slot     int
	src, dst *master
	settled  bool
}

// openMigration opens the migration of key's slot; the test's cleanup
// gives the slot back to its master, whatever happened.
func openMigration(t *testing.T, rdb *redis.ClusterClient, nodes map[string]*master, key string) *slotMigration {
	t.Helper()
	owner, err := rdb.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	m := &slotMigration{t: t, nodes: nodes, slot: keySlot(key), src: nodes[owner.Options().Addr]}
	for _, n := range nodes {
		if n != m.src {
			m.dst = n
			break
		}
	}
	openSlotMigration(t, m.slot, m.src, m.dst)
	t.Cleanup(func() {
		if !m.settled {
			m.settle()
		}
		moveSlot(t, nodes, m.slot, m.dst, m.src)
	})
	return m
}

// move migrates keys of the slot to the target.
func (m *slotMigration) move(keys ...string) { migrateSlotKeys(m.t, m.slot, m.src, m.dst, keys) }

// settle migrates the slot's remaining keys and closes the migration: the
// slot is the target's.
func (m *slotMigration) settle() {
	migrateSlotKeys(m.t, m.slot, m.src, m.dst, nil)
	closeSlotMigration(m.t, m.nodes, m.slot, m.dst)
	m.settled = true
}

func TestOrderedClaimDuringSlotMigration(t *testing.T) {
	rdb := cluster(t)
	ctx := context.Background()
	nodes := clusterMasters(t, rdb)
	for _, tc := range []struct {
		name string
		// moved: which of the slot's keys are on the target when the claim
		// comes: "order" (the entity's order record only), "" (none).
		moved    string
		pipeline bool
	}{
		{name: "order record moved, call new", moved: "order", pipeline: true},
		{name: "nothing moved yet, call new", moved: "", pipeline: true},
		{name: "order record moved, no pipelining", moved: "order", pipeline: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, rdb, WithPipelining(tc.pipeline))
			tag := "{e-" + testenv.RandName() + "}"
			entity, first, second := "ord:"+tag, "call:"+tag+":1", "call:"+tag+":2"
			slot := keySlot(s.RecordKey(entity))
			if got := keySlot(s.RecordKey(second)); got != slot {
				t.Fatalf("the call's slot %d is not its entity's %d", got, slot)
			}
			claim := func(ctx context.Context, key string, at time.Time) (idemstore.ClaimResult, error) {
				return s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{7}, Lease: time.Minute, TTL: time.Minute,
					Order: idemstore.OrderClaim{Key: entity, At: at}})
			}
			// The entity's first call makes its order record.
			t0 := time.Now()
			if res, err := claim(ctx, first, t0); err != nil || res.Status != idemstore.ClaimAcquired {
				t.Fatalf("first claim: %+v, %v", res, err)
			}
			m := openMigration(t, rdb, nodes, s.RecordKey(entity))
			if tc.moved == "order" {
				m.move(s.RecordKey(entity))
			}
			// The migration stays open for a second: longer than go-redis's
			// own retries of TRYAGAIN last.
			const open = time.Second
			type result struct {
				res  idemstore.ClaimResult
				err  error
				took time.Duration
			}
			done := make(chan result, 1)
			go func() {
				cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				defer cancel()
				start := time.Now()
				res, err := claim(cctx, second, t0.Add(time.Second))
				done <- result{res, err, time.Since(start)}
			}()
			select {
			case r := <-done:
				if r.err == nil {
					// Served while the slot was split? Only if the node
					// held both keys, which it cannot here.
					t.Fatalf("the claim returned during the migration: %+v", r.res)
				}
				t.Fatalf("the claim failed during the migration (after %v): %v", r.took.Round(time.Millisecond), r.err)
			case <-time.After(open):
			}
			m.settle()
			r := <-done
			if r.err != nil {
				t.Fatalf("the claim failed: %v (after %v)", r.err, r.took.Round(time.Millisecond))
			}
			if diff := cmp.Diff(idemstore.ClaimAcquired, r.res.Status); diff != "" {
				t.Fatalf("claim status (-want +got):\n%s", diff)
			}
			t.Logf("claimed %v after it was first refused, once the slot was settled", r.took.Round(time.Millisecond))
			// The order record moved with the slot and the claim advanced it.
			got, err := s.Get(ctx, second)
			if err != nil || got.State != idemstore.StateInProgress {
				t.Fatalf("the claimed record on the slot's new owner: %+v, %v", got, err)
			}
		})
	}
}

// TestOrderedClaimSlotNeverSettles: a migration left half-done (a
// resharding tool that died between SETSLOT MIGRATING and SETSLOT NODE)
// refuses the ordered claim for good; the claim gives up after
// slotSettleWait with idem.ErrStoreUnavailable, or at its ctx, never
// hangs.
func TestOrderedClaimSlotNeverSettles(t *testing.T) {
	rdb := cluster(t)
	ctx := context.Background()
	nodes := clusterMasters(t, rdb)
	defer func(d time.Duration) { slotSettleWait = d }(slotSettleWait)
	slotSettleWait = 300 * time.Millisecond
	s := newStore(t, rdb)
	tag := "{e-" + testenv.RandName() + "}"
	entity := "ord:" + tag
	claim := func(ctx context.Context, key string) error {
		_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{7}, Lease: time.Minute, TTL: time.Minute,
			Order: idemstore.OrderClaim{Key: entity, At: time.Now()}})
		return err
	}
	if err := claim(ctx, "call:"+tag+":1"); err != nil {
		t.Fatal(err)
	}
	openMigration(t, rdb, nodes, s.RecordKey(entity)).move(s.RecordKey(entity))
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    error
		cause   bool // the error names the TRYAGAIN
		within  time.Duration
	}{
		{name: "gives up after slotSettleWait", timeout: time.Minute, want: idem.ErrStoreUnavailable, cause: true, within: slotSettleWait + 2*time.Second},
		{name: "returns at its ctx", timeout: 100 * time.Millisecond, want: context.DeadlineExceeded, within: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, tc.timeout)
			defer cancel()
			start := time.Now()
			err := claim(cctx, "call:"+tag+":2")
			took := time.Since(start)
			if !errors.Is(err, tc.want) || tc.cause && !redis.IsTryAgainError(err) {
				t.Fatalf("claim = %v, want %v (around TRYAGAIN: %v)", err, tc.want, tc.cause)
			}
			if took > tc.within {
				t.Fatalf("the claim took %v, want at most %v", took, tc.within)
			}
		})
	}
}

// TestOrderedClaimsBesideRedirectedWritesDuringMigration: ordered claims
// refused with TRYAGAIN and heartbeats redirected with ASK, from many
// goroutines at once, while their slot migrates. go-redis's Cluster
// pipeline, when the first command it sent to a node got TRYAGAIN, sends
// every command of that node again on the slot's owner, including those
// it has already queued for the ASK target: one command then runs on two
// nodes at once and two goroutines write its reply (a data race; under
// -race this test failed while ordered claims went through the store's
// pipeline). Ordered claims are sent alone instead, never in a pipeline.
func TestOrderedClaimsBesideRedirectedWritesDuringMigration(t *testing.T) {
	rdb := cluster(t)
	ctx := context.Background()
	nodes := clusterMasters(t, rdb)
	s := newStore(t, rdb)
	tag := "{e-" + testenv.RandName() + "}"
	entity := "ord:" + tag
	owner := idemstore.Token{9}
	claim := func(ctx context.Context, key string) (idemstore.ClaimResult, error) {
		return s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: owner, Lease: time.Minute, TTL: time.Minute,
			Order: idemstore.OrderClaim{Key: entity, At: time.Unix(1_700_000_000, 0), Grace: time.Hour}})
	}
	// Calls whose records will have moved when they heartbeat.
	var moved []idemstore.Lease
	var movedKeys []string
	for i := range 8 {
		key := fmt.Sprintf("call:%s:moved-%d", tag, i)
		res, err := claim(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		moved = append(moved, idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: time.Minute, TTL: time.Minute})
		movedKeys = append(movedKeys, s.RecordKey(key))
	}
	m := openMigration(t, rdb, nodes, s.RecordKey(entity))
	m.move(movedKeys...)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := time.Now().Add(time.Second)
	for g := range 8 {
		wg.Add(2)
		go func() { // heartbeats: ASK to the target
			defer wg.Done()
			for time.Now().Before(stop) {
				if err := s.Heartbeat(ctx, moved[g]); err != nil {
					errs <- fmt.Errorf("heartbeat %s: %w", moved[g].Key, err)
					return
				}
			}
		}()
		go func() { // ordered claims of new calls: TRYAGAIN until the slot settles
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			key := fmt.Sprintf("call:%s:new-%d", tag, g)
			res, err := claim(cctx, key)
			if err == nil && res.Status != idemstore.ClaimAcquired {
				err = fmt.Errorf("status %v", res.Status)
			}
			if err != nil {
				errs <- fmt.Errorf("ordered claim %s: %w", key, err)
			}
		}()
	}
	time.Sleep(time.Until(stop) + 100*time.Millisecond)
	m.settle()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
