package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestMalformedRecordSameVerdictFromClaimGetListAndWrites: a value at a
// record key that the store cannot trust gets one verdict,
// idem.ErrCorruptRecord, from every reader and writer: the claim (SET NX
// GET, then the claim script), Get (the read script and decodeRecord),
// Admin's List and ForceRelease (what idemctl show and list use), and the
// fenced write script, called here with the record's own owner and fence
// so that an ownership check cannot answer before the record's form is
// judged. Before, a version-2 in-progress record without a Redis TTL was
// corrupt to Claim and absent to Get and List.
func TestMalformedRecordSameVerdictFromClaimGetListAndWrites(t *testing.T) {
	rdb := standalone(t)
	s := newStore(t, rdb)
	ctx := context.Background()
	owner, fp := idemstore.Token{7}, idemstore.Fingerprint{9}
	now := time.Now()
	finished := encodeRecord(idemstore.Record{State: idemstore.StateCompleted, Fence: 3, Owner: owner, Fingerprint: fp,
		LeaseUntil: now, ExpiresAt: now.Add(time.Hour), UpdatedAt: now}, 1)
	fresh, _ := encodeFresh(owner, fp, make([]byte, 8), time.Minute, time.Hour)
	running := encodeRecord(idemstore.Record{State: idemstore.StateInProgress, Fence: 3, Owner: owner, Fingerprint: fp,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), UpdatedAt: now}, 1)
	with := func(v []byte, f func(v []byte)) []byte {
		v = append([]byte(nil), v...)
		f(v)
		return v
	}
	tests := []struct {
		name  string
		value []byte
		ttl   time.Duration // 0: no Redis TTL
		fence uint64        // the record's fence, for the fenced writes
	}{
		{"foreign bytes", []byte("hello, not a record"), time.Minute, 0},
		{"truncated header", finished[:40], time.Minute, 0},
		{"wrong magic byte", with(finished, func(v []byte) { v[0] = 0x7A }), time.Minute, 3},
		{"unknown version", with(finished, func(v []byte) { v[1] = 9 }), time.Minute, 3},
		{"version 1 with state 0", with(finished, func(v []byte) { v[offState] = 0 }), time.Minute, 3},
		{"version 1 with state 42", with(finished, func(v []byte) { v[offState] = 42 }), time.Minute, 3},
		{"version 2 in progress without a TTL", fresh, 0, 1},
		{"version 2 in a finished state", with(fresh, func(v []byte) { v[offState] = byte(idemstore.StateCompleted) }), time.Minute, 1},
		{"version 2 with a lease past ten years", with(fresh, func(v []byte) {
			v[offLease] = 0x7F // ~2^62 µs
		}), time.Minute, 1},
		{"version 2 with a TTL past ten years", with(fresh, func(v []byte) { v[offExpiry] = 0x7F }), time.Minute, 1},
		{"version 4 in a finished state", with(finished, func(v []byte) { v[1] = stepsVersion }), time.Minute, 3},
		{"version 4 shorter than its header", with(running, func(v []byte) { v[1] = stepsVersion })[:headerLenV3-1], time.Minute, 3},
		{"version 4 with a truncated step", append(with(running, func(v []byte) { v[1] = stepsVersion }), "\x00\x00\x00\x06charge\x00\x00\x00\x09ch_1"...), time.Minute, 3},
		{"version 4 with a cut length", append(with(running, func(v []byte) { v[1] = stepsVersion }), "\x00\x00\x00\x01a\x00\x00"...), time.Minute, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "verdict:" + tt.name
			rk := s.RecordKey(key)
			l := idemstore.Lease{Key: key, Owner: owner, Fence: tt.fence, Duration: time.Minute, TTL: time.Hour}
			ops := []struct {
				name string
				run  func() (string, error)
			}{
				{"claim", func() (string, error) {
					res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{2}, Fingerprint: fp, Lease: time.Second, TTL: time.Minute})
					return res.Status.String(), err
				}},
				{"get", func() (string, error) { _, err := s.Get(ctx, key); return "", err }},
				{"list", func() (string, error) {
					listed := ""
					err := s.List(ctx, key, func(idemstore.Record) error { listed = "listed"; return nil })
					return listed, err
				}},
				{"force release", func() (string, error) { _, err := s.ForceRelease(ctx, key); return "", err }},
				{"heartbeat", func() (string, error) { return "", s.Heartbeat(ctx, l) }},
				{"complete", func() (string, error) { return "", s.Complete(ctx, l, idemstore.Result{Data: []byte("x")}) }},
				{"fail", func() (string, error) { return "", s.Fail(ctx, l, idemstore.Result{Data: []byte("x")}) }},
				{"release", func() (string, error) { return "", s.Release(ctx, l) }},
				{"step", func() (string, error) { return "", s.SaveStep(ctx, l, "charge", []byte("x")) }},
			}
			got, want := map[string]string{}, map[string]string{}
			for _, op := range ops {
				// Each operation judges the same value: put it back first.
				if err := rdb.Set(ctx, rk, tt.value, tt.ttl).Err(); err != nil {
					t.Fatal(err)
				}
				before, _ := rdb.Dump(ctx, rk).Result()
				what, err := op.run()
				switch {
				case err == nil:
					got[op.name] = "ok " + what
				case errors.Is(err, idem.ErrCorruptRecord):
					got[op.name] = "corrupt"
				case errors.Is(err, idem.ErrNotFound):
					got[op.name] = "not found"
				case errors.Is(err, idem.ErrLeaseLost):
					got[op.name] = "lease lost"
				default:
					got[op.name] = err.Error()
				}
				want[op.name] = "corrupt"
				if after, _ := rdb.Dump(ctx, rk).Result(); after != before {
					t.Errorf("%s changed the value at %s", op.name, rk)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}
